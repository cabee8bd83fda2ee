"""E-mail addresses, plain and written to dodge scrapers."""
from __future__ import annotations

import re

from pipeline.data.pii.recognizers.base import PiiRecognizer
from pipeline.data.pii.text import fold, holds_any


class EmailAddressRecognizer(PiiRecognizer):
    ENTITY = "EMAIL"
    _RE = re.compile(r"(?<![\w.+%-])[\w.+%-]{1,64}@(?:[^\W_](?:[\w-]{0,61}[^\W_])?\.)+[^\W\d_]{2,24}(?![\w-])")
    # written to dodge scrapers: "ali.veli [at] example [dot] com", "ivan(собака)mail(точка)ru"; the bracketed
    # forms only ("at" and "dot" as plain words are prose)
    _BRACKETED_AT = r"[\[({<]\s?(?:at|собака)\s?[\])}>]"
    _AT = r"\s?" + _BRACKETED_AT + r"\s?"
    _DOT = r"(?:\s?[\[({<]\s?(?:dot|nokta|точка)\s?[\])}>]\s?|\.)"
    _AT_HINT = re.compile(_BRACKETED_AT)  # searched in the folded text: the pattern's necessary part
    _OBFUSCATED = re.compile(r"(?<![\w.+%-])[\w.+%-]{1,64}" + _AT + r"(?:[^\W_](?:[\w-]{0,61}[^\W_])?" + _DOT
                             + r")+[^\W\d_]{2,24}(?![\w-])", re.IGNORECASE)

    # spelled out with plain words ("name at example dot org"): only with a dot word before a common top-level
    # domain, and not after a word that "at" follows in prose ("visit us at example dot com" is a site)
    _SPELLED_DOT = r"\s+(?:dot|nokta|точка)\s+"
    _TLDS = ("com|org|net|edu|gov|info|biz|io|co|me|ru|tr|su|uk|de|fr|it|es|nl|az|kz|by|ua|eu|us|ca|au|ch|at|se|"
             "dk|fi|no|pl|cz|pro|dev|app|mail|online|site|xyz|рф")
    _SPELLED = re.compile(
        r"(?<![\w.+%-])([\w+%-]{1,64}(?:(?:\.|" + _SPELLED_DOT + r")[\w+%-]{1,64}){0,3})\s+(?:at|собака)\s+"
        r"(?:[^\W_][\w-]{0,62}" + _SPELLED_DOT + r"){1,3}(?:" + _TLDS + r")(?![\w-])", re.IGNORECASE)
    _SPELLED_HINTS = (" dot ", " nokta ", " точка ")
    _PROSE_BEFORE_AT = frozenset("""us me you him her them it we they this that here there who one all is are was were
        be been look looking looked arrive arrived arriving stay stayed work works worked working live lives lived
        meet met home available located online found visit visited find found reach reached call email write
        mail contact up out back held based service sale good bad best""".split())

    def _bracketed(self, ctx) -> bool:
        """A bracketed "at" in the text (one scan for triggered() and find())."""
        # its opening bracket first: four C-speed substring tests, where the regex tests every character
        text = ctx.text  # folding changes no bracket
        return ctx.memo("email_bracketed_at", lambda: ("[" in text or "(" in text or "{" in text or "<" in text)
                        and self._AT_HINT.search(ctx.norm) is not None)

    def _spelled(self, ctx) -> bool:
        """A spelled-out dot in the text (one scan for triggered() and find())."""
        return ctx.memo("email_spelled_dot", lambda: holds_any(ctx.norm, self._SPELLED_HINTS))

    def triggered(self, ctx):
        return "@" in ctx.text or self._bracketed(ctx) or self._spelled(ctx)

    def find(self, ctx):
        text = ctx.text
        out = [self.hit(m.start(), m.end(), 0.9) for m in self._OBFUSCATED.finditer(text)] \
            if self._bracketed(ctx) else []
        if self._spelled(ctx):
            for m in self._SPELLED.finditer(text):
                local = m.group(1)
                if fold(local) in self._PROSE_BEFORE_AT or any(h.start < m.end() and m.start() < h.end for h in out):
                    continue
                out.append(self.hit(m.start(), m.end(), 0.8))
        if "@" not in text:
            return out
        for m in self._RE.finditer(text):
            s = m.start()
            pre = text[max(0, s - 80):s]
            k = pre.rfind("://")
            if k >= 0 and not any(ch.isspace() or ch == "/" for ch in pre[k + 3:]):
                continue  # "scheme://user:password@host": credentials (SECRET), not an address
            out.append(self.hit(s, m.end(), 1.0))
        return out
