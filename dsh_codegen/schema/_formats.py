"""``format`` assertions, used only when a validator is compiled with ``formats=True``.

Without it ``format`` is an annotation (2020-12's default). Each checker takes
a ``str`` and answers whether it is a valid instance of the format; formats not
listed here stay annotations even with ``formats=True``, as 2020-12 says.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from typing import Final

__all__ = ["FORMAT_CHECKERS"]

_DATE: Final = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_TIME: Final = re.compile(r"(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-](\d{2}):(\d{2}))", re.ASCII)
_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+", re.ASCII)
_URI: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*", re.ASCII)
_UUID: Final = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", re.ASCII)
_LABEL: Final = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?", re.ASCII)
_DAYS: Final = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


def _date(text: str) -> bool:
    match = _DATE.fullmatch(text)
    if match is None:
        return False
    year, month, day = (int(group) for group in match.groups())
    if not 1 <= month <= 12 or not 1 <= day <= _DAYS[month - 1]:
        return False
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return not (month == 2 and day == 29 and not leap)


def _time(text: str) -> bool:
    match = _TIME.fullmatch(text)
    if match is None:
        return False
    hour, minute, second = int(match[1]), int(match[2]), int(match[3])
    if match[6] is not None and (int(match[6]) > 23 or int(match[7]) > 59):
        return False
    return hour <= 23 and minute <= 59 and second <= 60  # 60: a leap second


def _date_time(text: str) -> bool:
    if len(text) < 11 or text[10] not in "Tt":
        return False
    return _date(text[:10]) and _time(text[11:])


def _ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True


def _ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return "%" not in text  # a zone id is not part of RFC 4291's text form


def _hostname(text: str) -> bool:
    name = text[:-1] if text.endswith(".") else text
    if not name or len(name) > 253:
        return False
    return all(_LABEL.fullmatch(label) for label in name.split("."))


FORMAT_CHECKERS: Final[dict[str, Callable[[str], bool]]] = {
    "date-time": _date_time,
    "date": _date,
    "time": _time,
    "email": lambda text: _EMAIL.fullmatch(text) is not None,
    "uri": lambda text: _URI.fullmatch(text) is not None,
    "uuid": lambda text: _UUID.fullmatch(text) is not None,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "hostname": _hostname,
}
