"""The ``eceb`` command line (click). Entry point: :func:`eceb_cli.main.main`."""
