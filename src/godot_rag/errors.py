"""The error a user's settings or request context raise, how a message quotes a piece of the input, and
the one rule for secrets in any text we show (errors, logs, reports, answers)."""
from __future__ import annotations

import re


class ConfigError(ValueError):
    pass


def clip(text, limit: int = 60) -> str:
    """A name from the input, as an error message may quote it: never the whole of a huge value."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


MASK = "***"
# `scheme://user:password@`: the password runs to the last `@` before the host part ends (a password may
# hold `@` or `:`), and the text need not be a URI the driver can parse (`postgresql://u:pw@[bad/x`).
_URI_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s\"']*:)[^\s\"']*@")
# key=value: `password=secret`, `password = 'se cret'`, `PGPASSWORD=secret`.
_KEY_PASSWORD = re.compile(r"(?P<head>\b(?:pg)?password\s*=\s*)(?:'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s,;)\"']+)",
                           re.IGNORECASE)


def mask_secrets(text: str) -> str:
    """`text` with every password a DSN in it may hold replaced by ***: `user:password@` in any URI-like
    text and `password=...` in key=value form, whether or not the DSN parses."""
    text = _URI_PASSWORD.sub(lambda m: f"{m['head']}{MASK}@", str(text))
    return _KEY_PASSWORD.sub(lambda m: f"{m['head']}{MASK}", text)
