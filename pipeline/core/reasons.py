"""Every reason code a row can be quarantined or a record dropped for, with its meaning: the one list the
stats (StageStats refuses a code that is not here), docs/run-directory.md's table and the report's readers share.

Quarantined: the row could not become a record (quarantine/*.jsonl references it by file and line).
Dropped: a valid record removed on purpose (counted; duplicates are listed in dedup_removed.parquet).
"""
from __future__ import annotations

QUARANTINE: dict[str, str] = {
    "invalid_json": "a line or value that is not valid JSON",
    "invalid_json_tail": "a .json file is invalid after its last readable record; the rest of it is unread",
    "undecodable": "a line that cannot be decoded in the file's (detected) encoding",
    "too_large": "a record over read.max_record_bytes, as read or as normalized",
    "too_deep": "arrays/objects nested deeper than read.max_depth",
    "too_many_turns": "a conversation with more messages than read.max_turns",
    "bad_csv_row": "a CSV/TSV row with the wrong number of cells, or an unbalanced quote",
    "not_an_object": "a JSON value that is not an object, a string or a list of messages",
    "unknown_format": "a row of a file whose format was not detected (no formats.mapping given)",
    "bad_mapping": "formats.mapping names no usable shape (messages, or prompt and response)",
    "missing_fields": "a field the detected format needs is missing, empty or not text",
    "unknown_role": "a turn's role (or ShareGPT `from`) that is not system, user, assistant or tool",
    "missing_role": "a turn without a role",
    "bad_role_order": "turns out of order: system not first, user/assistant not alternating, a stray tool result",
    "bad_turn": "a turn that is not an object",
    "bad_history": "an Alpaca `history` that is not a list of [instruction, response] pairs",
    "empty_turn": "a turn with neither content nor tool calls",
    "empty_text": "a plain-text row without text",
    "no_messages": "a conversation without turns",
    "non_string_content": "content that is neither text nor a list of content parts",
    "unsupported_content": "a content part of a type that is not text, reasoning or a tool call",
    "no_final_answer": "a conversation that does not end with an assistant answer",
    "invalid_tool_call": "tool-call arguments that are not a JSON object, or hold values datasets cannot load",
    "invalid_tools": "tool definitions that are not usable function definitions",
    "multimodal": "a row with images, audio or video: its placeholders would point at nothing",
    "preference_data": "a chosen/rejected or KTO row in an SFT file (formats.preference)",
    "chat_template_error": "a row the chosen chat template refuses to render",
    "pii_special_review": "a KVKK article-6 special-category mention (health, religion, ethnicity, politics, union, "
                          "sexual orientation, criminal record, biometrics) under pii.special quarantine; counted, not written",
}

DROP: dict[str, str] = {
    "empty_line": "an empty or whitespace-only line of a .jsonl/.txt file",
    "undesirable": "a KTO row labelled undesirable (formats.preference: chosen)",
    "too_short": "fewer characters than clean.min_chars",
    "empty_response": "an answer shorter than clean.min_assistant_chars",
    "exact_duplicate": "the same content as a kept record",
    "near_duplicate": "MinHash-similar to a kept record (dedup.threshold)",
    "validation_leak": "a train record that duplicates a validation record",
    "earlier_duplicate": "the same content as, or MinHash-similar to, a record of an earlier dataset (--against)",
    "eval_ngram": "a train record that shares a word n-gram with an eval set's record (decontam.ngram)",
    "eval_near_dup": "MinHash-similar to an eval set's record (decontam.near_threshold)",
    "pii_drop": "personal data of an entity whose pii operator is drop",
    "pii_special": "a KVKK article-6 special-category mention under pii.special drop",
    "repetitive": "an answer whose word n-grams mostly repeat (quality.repetition_threshold)",
    "quoted_thread": "an answer with a quoted e-mail thread, or only one (quality.threads)",
    "signature": "an answer with an e-mail signature, or only one (quality.signatures)",
    "no_words": "a turn without a letter or digit outside URLs (quality.no_words: drop)",
    "canned_answer": "a canned answer's record past quality.canned_cap (quality.canned: cap)",
    "too_long": "more tokens than the max sequence length under lengths.overflow drop, or that no policy can fit",
    "untrained": "a chat/instruction record with no trainable token at the max sequence length (lengths.untrained: drop)",
    "language": "a record whose detected language (meta.lang) is not in filters.languages",
    "lang_mismatch": "a chat record whose answer is in another language than its prompt (filters.lang_mismatch: drop)",
}


def check(reason: str, kind: str) -> str:
    """`reason` if it is a registered code of `kind` ("drop" or "quarantine"); ValueError otherwise: a code
    nobody documented would reach the report unexplained."""
    if reason not in (DROP if kind == "drop" else QUARANTINE):
        raise ValueError(f"unknown {kind} reason {reason!r}: add it to pipeline/core/reasons.py (and docs/run-directory.md)")
    return reason
