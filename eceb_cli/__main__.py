from eceb_cli.main import main

main()
