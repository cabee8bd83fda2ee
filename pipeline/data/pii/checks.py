"""Checksum and format validators for the identifiers the PII recognizers look for.

Pure functions on strings, no Presidio: the recognizers, the tests and the benchmark generator share them.
Every function takes the candidate as written (separators allowed) unless it says otherwise.
"""
from __future__ import annotations

import ipaddress
import re
from functools import lru_cache

import phonenumbers
from stdnum import iban as _iban

# phonenumbers matches region metadata with several hundred distinct regular expressions, more than the re
# module's 512-entry cache keeps: without its own cache it recompiles them all the time (a third of the
# PII stage's time went there)
if hasattr(phonenumbers, "enable_pattern_cache"):
    phonenumbers.enable_pattern_cache()


def digits(value: str) -> str:
    return "".join(ch for ch in value if "0" <= ch <= "9")


def tckn_valid(value: str) -> bool:
    """T.C. Kimlik No: 11 digits, first not 0, two check digits."""
    d = value
    if len(d) != 11 or not d.isdigit() or d[0] == "0":
        return False
    n = [ord(c) - 48 for c in d]
    d10 = ((n[0] + n[2] + n[4] + n[6] + n[8]) * 7 - (n[1] + n[3] + n[5] + n[7])) % 10
    d11 = sum(n[:10]) % 10
    return n[9] == d10 and n[10] == d11


def vkn_valid(value: str) -> bool:
    """Vergi Kimlik No: 10 digits, one check digit (the GIB algorithm, as in stdnum.tr.vkn)."""
    d = value
    if len(d) != 10 or not d.isdigit():
        return False
    s = 0
    for i, ch in enumerate(reversed(d[:9]), 1):
        c1 = (int(ch) + i) % 10
        if c1:
            s += (c1 * (2 ** i)) % 9 or 9
    return (10 - s) % 10 == int(d[9])


_INN10_W = (2, 4, 10, 3, 5, 9, 4, 6, 8)
_INN12_W1 = (7, 2, 4, 10, 3, 5, 9, 4, 6, 8)
_INN12_W2 = (3, 7, 2, 4, 10, 3, 5, 9, 4, 6, 8)


def inn_valid(value: str) -> bool:
    """Russian INN: 10 digits (organisation, one check digit) or 12 (person, two)."""
    d = value
    if not d.isdigit():
        return False
    n = [ord(c) - 48 for c in d]
    if len(n) == 10:
        return sum(w * x for w, x in zip(_INN10_W, n)) % 11 % 10 == n[9]
    if len(n) == 12:
        c1 = sum(w * x for w, x in zip(_INN12_W1, n)) % 11 % 10
        c2 = sum(w * x for w, x in zip(_INN12_W2, n)) % 11 % 10
        return c1 == n[10] and c2 == n[11]
    return False


def snils_valid(value: str) -> bool:
    """SNILS: 9 digits + 2 check digits. Sum of digit*weight (9..1); <100 -> itself, 100/101 -> 00,
    else mod 101 (100 -> 00). Defined for numbers above 001-001-998."""
    d = digits(value)
    if len(d) != 11:
        return False
    body = d[:9]
    if int(body) <= 1001998:
        return False
    s = sum(int(ch) * w for ch, w in zip(body, range(9, 0, -1)))
    if s > 101:
        s %= 101
    check = 0 if s in (100, 101) else s
    return check == int(d[9:])


def ogrn_valid(value: str) -> bool:
    """OGRN (13 digits): (first 12 as a number mod 11) mod 10 == last digit. First digit 1 or 5
    (legal entities; 2,4,6,7,8,9 are state-assigned record numbers, accepted too), never 0 or 3."""
    d = value
    if len(d) != 13 or not d.isdigit() or d[0] in "03":
        return False
    return int(d[:12]) % 11 % 10 == int(d[12])


def ogrnip_valid(value: str) -> bool:
    """OGRNIP (15 digits, first digit 3): (first 14 mod 13) mod 10 == last digit.
    (stdnum.ru.ogrn omits the final mod 10 and rejects valid numbers.)"""
    d = value
    if len(d) != 15 or not d.isdigit() or d[0] != "3":
        return False
    return int(d[:14]) % 13 % 10 == int(d[14])


def luhn_valid(d: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(d)):
        x = ord(ch) - 48
        if i % 2:
            x *= 2
            if x > 9:
                x -= 9
        total += x
    return total % 10 == 0


def card_valid(value: str) -> bool:
    """Payment card: 13-19 digits, a known issuer prefix, Luhn."""
    d = digits(value)
    if not 13 <= len(d) <= 19 or len(set(d)) < 2:
        return False
    if not card_prefix_ok(d):
        return False
    return luhn_valid(d)


def card_prefix_ok(d: str) -> bool:
    p2 = int(d[:2])
    p4 = int(d[:4])
    p6 = int(d[:6])
    first = d[0]
    if first == "4":  # Visa
        return len(d) in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return len(d) == 16
    if p2 in (34, 37):  # Amex
        return len(d) == 15
    if 2200 <= p4 <= 2204:  # Mir
        return 16 <= len(d) <= 19
    if p4 == 9792:  # Troy (TR)
        return len(d) == 16
    if p4 == 6011 or p2 == 65 or 644 <= int(d[:3]) <= 649 or 622126 <= p6 <= 622925:  # Discover
        return 16 <= len(d) <= 19
    if p2 == 35:  # JCB
        return 16 <= len(d) <= 19
    if p4 in (2131, 1800):  # JCB (old 15-digit)
        return len(d) == 15
    if p2 == 62:  # UnionPay
        return 16 <= len(d) <= 19
    if p2 in (36, 38, 39) or 300 <= int(d[:3]) <= 305 or p4 == 3095:  # Diners
        return 14 <= len(d) <= 19
    if p2 in (50, 56, 57, 58) or p2 == 63 or p2 == 67 or p2 == 69:  # Maestro
        return 12 <= len(d) <= 19
    return False


def iban_valid(value: str) -> bool:
    """IBAN: country format/length and mod 97 (python-stdnum)."""
    compact = "".join(value.split()).upper().replace("-", "")
    if len(compact) < 15 or not compact[:2].isalpha() or not compact[2:4].isdigit():
        return False
    # the mod 97 check alone first: python-stdnum's full check (country formats) is ~20x dearer, and the
    # IBAN recognizer tries every prefix of an IBAN-like string that fails
    try:
        if int("".join(_IBAN_DIGITS.get(ch, ch) for ch in compact[4:] + compact[:4])) % 97 != 1:
            return False
    except ValueError:  # a character that is neither a digit nor A-Z
        return False
    return _iban.is_valid(compact)


_IBAN_DIGITS = {chr(c): str(c - 55) for c in range(ord("A"), ord("Z") + 1)}


@lru_cache(maxsize=256)
def iban_length(country: str) -> int | None:
    """The length of a country's IBAN (python-stdnum's format table), or None for an unknown country."""
    info = _iban._ibandb.info(country)
    bban = info[0][1].get("bban") if info and info[0][1] else None
    if not bban:
        return None
    return 4 + sum(int(n) for n in re.findall(r"(\d+)!?[nac]", bban))


def iban_end(text: str, start: int, end: int) -> int | None:
    """Where the longest valid IBAN that starts at `start` ends within text[start:end] (spaces and dashes may
    lie between its characters), or None: an IBAN-shaped match may run on into the digits after it."""
    pos = [k for k in range(start, end) if text[k].isalnum()]
    compact = "".join(text[k] for k in pos)
    for n in range(len(compact), 14, -1):
        if iban_valid(compact[:n]):
            return pos[n - 1] + 1
    return None


def ip_valid(value: str) -> bool:
    try:
        addr = ipaddress.ip_address(value)
    except ValueError:
        return False
    if addr.version == 4:
        parts = value.split(".")
        # leading zeros ("01.02.2024.1") are dates or versions, not addresses
        return not any(len(p) > 1 and p[0] == "0" for p in parts)
    return value.count(":") >= 2 and sum(ch.isalnum() for ch in value) >= 4


# Phones: which regions a national-format number (no + or 00 prefix) may be read in.
_PHONE_REGIONS_BY_LANG = {"tr": ("TR", "RU", "US"), "ru": ("RU", "TR", "US"), "en": ("US", "GB", "TR", "RU")}
# These regions' national numbers have at most ten digits, so eleven hold a trunk prefix (0, 8, 1) or a
# country code (1, 7, 44, 90) first (tests/data/test_pii_recognizers.py checks phonenumbers on the others)
_ELEVEN_DIGIT_STARTS = frozenset(("0", "1", "7", "8", "44", "90"))
# Regions read only with their trunk prefix 0, after the language's own (a German number is written 0151 ...
# at home; without the 0 its eleven digits would read as anything). India's ten-digit mobiles need no prefix.
_TRUNK_REGIONS = ("DE", "IN")


@lru_cache(maxsize=65536)
def phone_lookup(value: str, lang: str = "en") -> "tuple[phonenumbers.PhoneNumber, str] | None":
    """A valid phone number read from `value` and its region ("" when it has none), or None. International
    numbers (+ or 00) in any region; national numbers as TR (0 5xx ..., 5xx ...), RU (8 9xx ..., 9xx ...),
    US/GB. The region is found once: phonenumbers.is_valid_number(n) is region_code_for_number(n) followed
    by is_valid_number_for_region(n, region), and the region is what the caller wants next."""
    raw = value.strip()
    d = digits(raw)
    if len(d) < 10 or len(d) > 15:
        return None
    if raw.startswith("+") or raw.startswith("00"):
        text = "+" + d[2:] if raw.startswith("00") else "+" + d
        try:
            num = phonenumbers.parse(text, None)
        except phonenumbers.NumberParseException:
            return None
        region = phonenumbers.region_code_for_number(num)
        return (num, region or "") if phonenumbers.is_valid_number_for_region(num, region) else None
    if len(d) == 11 and d[0] not in _ELEVEN_DIGIT_STARTS and d[:2] not in _ELEVEN_DIGIT_STARTS:
        return None  # a TCKN or a SNILS, not a phone: skips three to four parses
    regions = _PHONE_REGIONS_BY_LANG.get(lang, _PHONE_REGIONS_BY_LANG["en"])
    if d[0] == "0":
        regions = regions + _TRUNK_REGIONS
    elif len(d) == 10 and lang == "en":
        regions = regions + ("IN",)
    for default in regions:
        try:
            num = phonenumbers.parse(d, default)
        except phonenumbers.NumberParseException:
            continue
        region = phonenumbers.region_code_for_number(num)
        if phonenumbers.is_valid_number_for_region(num, region):
            # a national number must use all its digits in that region's format
            national = str(num.national_number)
            if d.endswith(national) and len(d) - len(national) <= 2:
                return num, region or ""
    return None


def phone_region(value: str, lang: str = "en") -> str | None:
    """The region of a valid phone number in `value` (phonenumbers.region_code_for_number; "" when it has
    none), or None when `value` holds no valid number."""
    found = phone_lookup(value, lang)
    return found[1] if found else None


def phone_e164(value: str, lang: str = "en") -> str | None:
    found = phone_lookup(value, lang)
    return phonenumbers.format_number(found[0], phonenumbers.PhoneNumberFormat.E164) if found else None
