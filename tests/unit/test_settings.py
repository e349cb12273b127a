"""A setting that does not parse is named, and its value never repeated
(it may be a password or a key given to the wrong variable):
eceb_worker/settings.py, docs/SETTINGS.md."""

from __future__ import annotations

import pytest

from eceb_worker.cluster.app import redis_tls_options
from eceb_worker.settings import SETTINGS, Setting, load_settings

PLANTED = ("planted-Secret-7", " -70917 ", "70917x", "when_required-planted")


@pytest.mark.parametrize("setting", SETTINGS, ids=lambda setting: setting.name)
def test_no_setting_repeats_a_value_it_refuses(setting: Setting) -> None:
    for value in PLANTED:
        message = _refusal(setting, value)
        if message is not None:
            assert message.startswith(f"{setting.name} "), message
            assert value.strip() not in message and "70917" not in message, message


def _refusal(setting: Setting, value: str) -> str | None:
    """The message refusing ``value`` for ``setting``, None when it is taken."""
    try:
        load_settings({setting.name: value})
    except ValueError as exc:
        return str(exc)
    return None


def test_numbers_and_choices_say_what_they_take() -> None:
    with pytest.raises(ValueError, match=r"^ECEB_MAX_DELIVERIES must be an integer of at least 1$"):
        load_settings({"ECEB_MAX_DELIVERIES": "-70917"})
    with pytest.raises(ValueError, match=r"^ECEB_TASK_MAX_RETRIES must be an integer of at least 0$"):
        load_settings({"ECEB_TASK_MAX_RETRIES": "x"})
    with pytest.raises(ValueError, match=r"^ECEB_S3_CHECKSUMS must be one of when_required, when_supported$"):
        load_settings({"ECEB_S3_CHECKSUMS": "bogus"})


def test_a_ca_bundle_that_is_not_a_file_is_not_repeated() -> None:
    with pytest.raises(ValueError, match=r"^ECEB_REDIS_CA_CERTS: no such file$"):
        redis_tls_options("rediss://127.0.0.1:1/0", "the broker URL", "/planted-Secret-7.pem")
