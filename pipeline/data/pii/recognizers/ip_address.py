"""IPv4 and IPv6 addresses."""
from __future__ import annotations

import re

from pipeline.data.pii import checks
from pipeline.data.pii.recognizers.base import PiiRecognizer
from pipeline.data.pii.text import ContextWords

_DIGIT_DOT_DIGIT = re.compile(r"\d\.\d")


class IpAddressRecognizer(PiiRecognizer):
    ENTITY = "IP_ADDRESS"
    _V4 = re.compile(r"\d(?<![\w.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?![\w]|\.\d)")  # first a class: text._NUMSPAN
    _V6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:.]*::|(?:[0-9A-Fa-f]{1,4}:){3})[0-9A-Fa-f:.]{4,45}(?![\w:])")
    _VERSION = ContextWords(["version", "sürüm", "versiyon", "версия", "ver", "v", "build", "release", "oid"])

    def triggered(self, ctx):
        # IPv6: two colons; IPv4: a digit run of four groups, the first two joined by a dot
        if ctx.text.count(":") >= 2:
            return True
        return ctx.has_digit and _DIGIT_DOT_DIGIT.search(ctx.text) is not None and \
            any(len(r.groups) >= 4 and ctx.text[r.groups[0][1]] == "." for r in ctx.runs)

    def find(self, ctx):
        import ipaddress

        out = []
        text = ctx.text
        for m in self._V4.finditer(text):
            s, e = m.span()
            value = text[s:e]
            if not checks.ip_valid(value):
                continue
            addr = ipaddress.ip_address(value)
            if addr.is_loopback or addr.is_unspecified or addr.is_multicast or value.startswith("255."):
                base = 0.2
            else:
                base = 0.65
            if self._VERSION.near(ctx.norm, s, e, 12):
                base -= 0.45
            out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.3)))
        if ":" in text:
            for m in self._V6.finditer(text):
                s, e = m.span()
                value = text[s:e].rstrip(".")
                e = s + len(value)
                if checks.ip_valid(value):
                    addr = ipaddress.ip_address(value)
                    base = 0.2 if addr.is_loopback or addr.is_unspecified else 0.8
                    out.append(self.hit(s, e, self.context_score(ctx, s, e, base, bonus=0.2)))
        return out
