"""Credentials: keys, tokens and passwords."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import PiiRecognizer
from pipeline.data.pii.text import ContextWords, presence_pattern

_SPACED_DASH = re.compile(r"\s-\s")
_CASED_HINTS = ("-", "_", ":", "A", "xox", "eyJ")  # every provider literal holds one (SecretRecognizer._cased)


class SecretRecognizer(PiiRecognizer):
    """Credentials: private key blocks, provider tokens (AWS, GitHub, Slack, OpenAI-style sk-, Stripe,
    Google, JWT, Telegram bots), Bearer tokens, passwords in URLs and `password: ...` pairs."""

    ENTITY = "SECRET"
    _PATTERNS = [
        ("private_key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S), 1.0, 0),
        ("aws_key", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|AGPA|AIDA|AROA)[A-Z0-9]{16}(?![A-Z0-9])"), 0.95, 0),
        ("github", re.compile(r"(?<![\w])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})"), 0.95, 0),
        ("slack", re.compile(r"(?<![\w])xox[abposr]-[A-Za-z0-9-]{10,}"), 0.95, 0),
        ("sk_token", re.compile(r"(?<![\w-])sk-(?:proj-|ant-|live-)?[A-Za-z0-9_-]{20,}"), 0.95, 0),
        ("stripe", re.compile(r"(?<![\w])(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0.95, 0),
        ("google", re.compile(r"(?<![\w])AIza[0-9A-Za-z_-]{35}"), 0.95, 0),
        ("jwt", re.compile(r"(?<![\w-])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0.95, 0),
        ("telegram", re.compile(r"(?<![\d])\d{8,10}:AA[A-Za-z0-9_-]{33}"), 0.95, 0),
        ("bearer", re.compile(r"(?i:bearer)\s+([A-Za-z0-9._~+/-]{16,}=*)"), 0.9, 1),
        ("url_credentials", re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*://([^\s:/?#@\"']+:[^\s/@\"']+)@"), 1.0, 1),
        ("keyword_value", re.compile(
            r"(?i:password|passwd|pwd|pass|passcode|şifre(?:m|si|niz)?|parola(?:m|sı)?|пароль|api[_ -]?key|apikey|"
            r"secret(?:[_ -]?key)?|client[_ -]?secret|access[_ -]?token|auth[_ -]?token|refresh[_ -]?token|"
            r"token|aws_secret_access_key)"
            r"[\"']?\s*(?:[:=]|=>|\bis\b|\s-\s|:\s*=)\s*[\"']?([^\s\"',;<>]{6,})"), 0.85, 1),
    ]

    # a literal each pattern's match must contain (in the text, or in the folded text for the case-blind
    # ones): the patterns whose literal is absent are not run (most start with a character class that
    # the regex engine tries at every position)
    _NEEDS = {"private_key": ("-----BEGIN",), "aws_key": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA"),
              "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "slack": ("xox",), "sk_token": ("sk-",),
              "stripe": ("_live_", "_test_"), "google": ("AIza",), "jwt": ("eyJ",), "telegram": (":AA",),
              "url_credentials": ("://",)}
    _NEEDS_FOLDED = {"bearer": ("bearer",)}
    _CASED = tuple(k for keys in _NEEDS.values() for k in keys)  # any of them: a cased pattern may match
    _FOLDED = ContextWords(["bearer", "password", "passwd", "passcode", "pass", "pwd", "şifre", "sifre", "parola",
                            "пароль", "api key", "api_key", "api-key", "apikey", "secret", "token",
                            "aws_secret_access_key", "client_secret", "access_token", "auth_token"])

    _CASED_RX = re.compile(presence_pattern(_CASED))  # any(k in text for k in _CASED), one scan

    def _keyword_starts(self, norm: str) -> list[int]:
        """Every position where a keyword starts, overlapping ones too ("client_secret_key": at "client" and
        "secret"), in order: str.find per keyword is C-speed, where a look-ahead alternation is tried at every
        character (~40 ns each)."""
        starts = set()
        for word in self._FOLDED.words:
            k = norm.find(word)
            while k >= 0:
                starts.add(k)
                k = norm.find(word, k + 1)
        return sorted(starts)

    def _cased(self, ctx) -> bool:
        """Any provider literal in the text (one scan for triggered() and find())."""
        # each literal holds one of these (a C-speed substring test each; the regex tests every character)
        text = ctx.text
        return ctx.memo("secret_cased", lambda: ("-" in text or "_" in text or ":" in text or "A" in text
                                                 or "xox" in text or "eyJ" in text)
                        and self._CASED_RX.search(text) is not None)

    def _separated(self, ctx) -> bool:
        """What keyword_value needs after its keyword: ':' or '=', the word "is", or a dash between spaces (prose
        holds "password" far more often than a value after it)."""
        text = ctx.text
        return ctx.memo("secret_separated", lambda: ":" in text or "=" in text or "is" in ctx.words
                        or ("-" in text and _SPACED_DASH.search(text) is not None))

    def triggered(self, ctx):
        if self._cased(ctx):
            return True
        # anywhere, not only at a word start: "mypassword=..." is matched by the keyword pattern too (the
        # separator first: a few substring tests, where the keyword scan tests every character)
        return (self._separated(ctx) or "bearer" in ctx.norm) and self._FOLDED.quick.search(ctx.norm) is not None

    def find(self, ctx):
        out = []
        text = ctx.text
        cased = self._cased(ctx)  # whether any literal below is there at all
        for name, rx, score, group in self._PATTERNS:
            needs = self._NEEDS.get(name)
            if needs is not None and not (cased and any(k in text for k in needs)):
                continue
            needs = self._NEEDS_FOLDED.get(name)
            if needs is not None and not any(k in ctx.norm for k in needs):
                continue
            if name == "url_credentials" and "@" not in text:
                continue
            if name == "keyword_value" and (self._FOLDED.quick.search(ctx.norm) is None or not self._separated(ctx)):
                continue
            if name != "keyword_value":
                for m in rx.finditer(text):
                    s, e = m.span(group)
                    out.append(self.hit(s, e, score, name))
                continue
            # the case-blind keyword alternation costs ~40 ns a character when searched for; instead the
            # pattern is matched only where the folded text holds a keyword (same positions: fold keeps lengths)
            pos = 0
            for start in self._keyword_starts(ctx.norm):
                if start < pos:
                    continue
                m = rx.match(text, start)
                if m is None:
                    continue
                s, e = m.span(group)
                while e > s and text[e - 1] in ".,;:!?)" and (e == len(text) or text[e].isspace()):
                    e -= 1
                value = text[s:e]
                # a word after "password" is prose ("password is required", "key: Authorization: ..."), not
                # a secret; look again from that word ("token is password: X7!...")
                if value.isalpha() and (value.islower() or value.istitle()) or len(value) < 6:
                    pos = s
                    continue
                out.append(self.hit(s, e, score, name))
                pos = e
        return out
