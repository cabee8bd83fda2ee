"""The PII step: field stripping, operators (placeholder, mask, pseudonym, drop), the strict KVKK policy,
the summary, and that no planted value reaches any output, counter or error message."""
import json
import multiprocessing as mp

import pytest

from pipeline.core.config import PiiConfig
from pipeline.core.stats import StageStats
from pipeline.data.pii import PiiPolicyError, PiiStep, kvkk_summary, strip_fields

pytestmark = pytest.mark.timeout(300)

SALT = b"test-salt"

PLANTED = {
    "tckn": "10000000146",
    "phone": "+90 532 123 45 67",
    "iban": "TR33 0006 1005 1978 6457 8413 26",
    "email": "ayse.yilmaz@example.com.tr",
    "card": "4111 1111 1111 1111",
    "inn": "500100732259",
    "ru_phone": "8 (916) 123-45-67",
    "name_tr": "Ayşe Yılmaz",
    "name_ru": "Иванов Пётр Сергеевич",
    "name_en": "John Smith",
    "ip": "203.0.113.77",
    "secret": "AKIAIOSFODNN7EXAMPLE",
    "meta_phone": "+905551112233",
}


def chat(*contents, meta="{}", **extra):
    msgs = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
    return {"id": "x", "kind": "chat", "messages": msgs, "text": None, "source": {"file": "f", "line": 1},
            "meta": meta, **extra}


def text_record(text, meta="{}"):
    return {"id": "t", "kind": "text", "messages": None, "text": text, "source": {"file": "f", "line": 2},
            "meta": meta}


def planted_batch():
    p = PLANTED
    tool_args = json.dumps({"email": p["email"], "note": f"call {p['phone']}", "tckn_number": int(p["tckn"])})
    rec = chat(f"Merhaba, ben {p['name_tr']}. TC kimlik numaram {p['tckn']}, telefonum {p['phone']}.",
               f"Teşekkürler, iade {p['iban']} IBAN'ına yapılacak.",
               meta=json.dumps({"customer_email": p["email"], "channel": "web",
                                "notes": {"contact": f"tel {p['meta_phone']}", "agent_name": "Ali Kaya"}}))
    rec["messages"][1]["tool_calls"] = [{"name": "refund", "arguments": tool_args}]
    return [
        rec,
        chat(f"Please charge card {p['card']} and mail {p['email']}. Login from {p['ip']}.",
             f"Thanks {p['name_en']}, key {p['secret']} was revoked."),
        text_record(f"Меня зовут {p['name_ru']}, ИНН {p['inn']}, телефон {p['ru_phone']}."),
    ]


def run(batch, **cfg):
    step = PiiStep(PiiConfig(**cfg), salt=SALT)
    return step(batch), step.stats


def dump(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, default=str)


def assert_no_planted(text: str, where: str):
    for name, value in PLANTED.items():
        compact = value.replace(" ", "").replace("-", "").replace("(", "").replace(")", "")
        flat = text.replace(" ", "").replace("-", "").replace("(", "").replace(")", "")
        assert value not in text and compact not in flat, (name, where)


# ------------------------------------------------------------------------------------------ fields

def test_strip_fields_builtin_list_at_any_depth():
    meta = json.dumps({"customerEmail": "a@b.c", "Telefon": "1", "lang": "tr", "TC_Kimlik_No": "1",
                       "customer": {"full_name": "A B", "tier": "gold"}, "contacts": [{"phone": "2", "kind": "home"}],
                       "zip_code": "34000", "file_name": "x.txt", "ip": "1.2.3.4", "user_id": 7})
    new, removed = strip_fields(meta, None)
    assert json.loads(new) == {"lang": "tr", "customer": {"tier": "gold"}, "contacts": [{"kind": "home"}],
                               "zip_code": "34000", "file_name": "x.txt"}
    assert sorted(removed) == sorted(["customerEmail", "Telefon", "TC_Kimlik_No", "customer.full_name",
                                      "contacts[].phone", "ip", "user_id"])


def test_strip_fields_configured_list_and_odd_input():
    meta = json.dumps({"email": "a@b.c", "secret_code": "x", "Secret-Code": "y"})
    new, removed = strip_fields(meta, ["secret_code"])
    assert json.loads(new) == {"email": "a@b.c"} and removed == ["secret_code", "Secret-Code"]
    assert strip_fields("", None) == ("", [])
    assert strip_fields("not json", None) == ("not json", [])
    assert strip_fields('"a string"', None) == ('"a string"', [])
    same = json.dumps({"lang": "tr"})
    assert strip_fields(same, None) == (same, [])


# ------------------------------------------------------------------------------------------ process

def test_process_anonymizes_every_field():
    out, stats = run(planted_batch())
    assert len(out) == 3
    a, b, c = out
    assert a["messages"][0]["content"] == "Merhaba, ben <PERSON>. TC kimlik numaram <TCKN>, telefonum <PHONE>."
    assert a["messages"][1]["content"].startswith("Teşekkürler, iade <IBAN> IBAN")
    args = json.loads(a["messages"][1]["tool_calls"][0]["arguments"])
    assert args == {"email": "<EMAIL>", "note": "call <PHONE>", "tckn_number": "<TCKN>"}
    meta = json.loads(a["meta"])
    assert meta == {"channel": "web", "notes": {"contact": "tel <PHONE>"}}  # *_email, *_name fields removed
    assert "<CREDIT_CARD>" in b["messages"][0]["content"] and "<IP_ADDRESS>" in b["messages"][0]["content"]
    assert b["messages"][1]["content"] == "Thanks <PERSON>, key <SECRET> was revoked."
    assert c["text"] == "Меня зовут <PERSON>, ИНН <INN>, телефон <PHONE>."
    ents = stats.counters["entities"]
    assert ents["PHONE"] == 4 and ents["TCKN"] == 2 and ents["EMAIL"] == 2 and ents["PERSON"] == 3
    assert stats.counters["languages"]["ru"] == {"PERSON": 1, "INN": 1, "PHONE": 1}
    assert stats.counters["fields_stripped"] == {"x_email": 1, "agent_name": 1}
    assert stats.counters["records_by_language"] == {"tr": 1, "en": 1, "ru": 1}
    assert not stats.dropped


def test_a_meta_text_seen_before_is_handled_as_the_first_time():
    """The step skips a meta text it has seen hold nothing to strip, analyze or write back; one that held
    something is stripped and anonymized every time it comes."""
    plain, personal = '{"lang": "tr"}', '{"lang": "tr", "x_email": "a@b.co", "note": "tel +90 532 123 45 67"}'
    batch = [{"id": str(i), "text": "Kargo nerede?", "meta": m} for i, m in enumerate([plain, personal] * 3)]
    out, stats = run(batch)
    assert [r["meta"] for r in out[::2]] == [plain] * 3
    assert {r["meta"] for r in out[1::2]} == {'{"lang":"tr","note":"tel <PHONE>"}'}
    assert stats.counters["fields_stripped"] == {"x_email": 3}


def test_tool_call_arguments_by_field_name_and_content():
    args = {"name": "report.pdf", "customer_name": "Ali Kaya", "phone": "12", "query": f"TC {PLANTED['tckn']}",
            "nested": [{"email": "x"}], "count": 3}
    rec = chat("Rapor lazım.", "Hazırlıyorum.")
    rec["messages"][1]["tool_calls"] = [{"name": "make_report", "arguments": json.dumps(args)},
                                        {"name": "raw", "arguments": f"not json {PLANTED['tckn']}"}]
    out, stats = run([rec])
    calls = out[0]["messages"][1]["tool_calls"]
    assert json.loads(calls[0]["arguments"]) == {"name": "report.pdf", "customer_name": "<PERSON>",
                                                  "phone": "<PHONE>", "query": "TC <TCKN>",
                                                  "nested": [{"email": "<EMAIL>"}], "count": 3}
    assert calls[1]["arguments"] == "not json <TCKN>" and calls[0]["name"] == "make_report"
    assert stats.counters["methods"]["PERSON"] == {"field": 1}


def test_input_batch_is_not_modified():
    batch = planted_batch()
    before = dump(batch)
    run(batch)
    assert dump(batch) == before


def test_mask_operator_keeps_shape():
    out, _ = run([text_record(f"Telefonum {PLANTED['phone']}.")], operator="mask")
    assert out[0]["text"] == "Telefonum +** *** *** ** **."


def test_drop_operator_drops_the_record():
    batch = [text_record(f"Kart {PLANTED['card']}"), text_record("Siparişim gelmedi, yardım edin.")]
    out, stats = run(batch, operators={"CREDIT_CARD": "drop"})
    assert [r["text"] for r in out] == ["Siparişim gelmedi, yardım edin."]
    assert stats.dropped["pii_drop"] == 1 and stats.counters["dropped_records"] == 1


def test_pseudonyms_are_consistent_within_a_run():
    step = PiiStep(PiiConfig(operator="pseudonym"), salt=SALT)
    first = step([text_record("Telefon: +90 532 123 45 67, Ayşe Yılmaz aradı."),
                  text_record("Numara 0532 123 45 67 (Ayşe Yılmaz)")])
    second = step([text_record("Tekrar: +905321234567. Ahmet Kaya aradı.")])
    token = first[0]["text"].split()[1].rstrip(",")
    assert token.startswith("<PHONE_") and len(token) == len("<PHONE_>") + 10
    # the same number written three ways -> one token, in every batch
    assert token in first[1]["text"] and token in second[0]["text"]
    name_token = first[0]["text"].split(", ")[1].split(" aradı")[0]
    assert name_token.startswith("<PERSON_") and name_token in first[1]["text"]
    assert name_token not in second[0]["text"]  # another person, another token
    # another step with the same salt (another batch, another worker) gives the same tokens
    again = PiiStep(PiiConfig(operator="pseudonym"), salt=SALT)([text_record("Telefon: +90 532 123 45 67")])
    assert token in again[0]["text"]
    other = PiiStep(PiiConfig(operator="pseudonym"), salt=b"another-salt")([text_record("Telefon: +90 532 123 45 67")])
    assert token not in other[0]["text"]


def _pseudonym_in_child(salt: bytes) -> str:
    from pipeline.data.pii.operators import Operators

    return Operators("pseudonym", {}, salt).pseudonym("PHONE", "0532 123 45 67", "tr")


@pytest.mark.integration  # a spawned worker process
def test_pseudonyms_agree_across_worker_processes():
    from pipeline.data.pii.operators import Operators

    here = Operators("pseudonym", {}, SALT).pseudonym("PHONE", "+90 532 123 45 67", "tr")
    with mp.get_context("spawn").Pool(1) as pool:
        assert pool.apply(_pseudonym_in_child, (SALT,)) == here


def test_salt_is_required_for_pseudonyms_and_never_shown():
    with pytest.raises(ValueError, match="salt"):
        PiiStep(PiiConfig(operators={"PERSON": "pseudonym"}), salt=b"")
    step = PiiStep(PiiConfig(operator="pseudonym"), salt=b"s3cr3t-salt-value")
    assert "s3cr3t" not in repr(step) and "s3cr3t" not in repr(step.ops)
    PiiStep(PiiConfig(), salt=b"")  # placeholders need none


def test_unknown_entity_in_operators_is_refused():
    with pytest.raises(ValueError, match="unknown entity type 'NAME'"):  # by the config, before any data is read
        PiiConfig(operators={"NAME": "mask"})


# ------------------------------------------------------------------------------------------ policy

def test_strict_policy_fails_when_detected_data_would_remain():
    # a lone first name mid-sentence scores 0.6: below this threshold it stays, and strict refuses that
    batch = [text_record(f"I spoke with Sarah about card {PLANTED['card']} yesterday.")]
    with pytest.raises(PiiPolicyError) as err:
        run(batch, kvkk="strict", score_threshold=0.9, strict_score=0.5)
    msg = str(err.value)
    assert "PERSON: 1" in msg and "1 record" in msg
    assert "Sarah" not in msg and "4111" not in msg
    # report mode lets it through and counts it as residual
    out, stats = run(batch, score_threshold=0.9, strict_score=0.5)
    assert "Sarah" in out[0]["text"] and stats.counters["residual"]["PERSON"] == 1


def test_strict_policy_passes_when_everything_detected_is_removed():
    out, _ = run(planted_batch(), kvkk="strict")
    assert len(out) == 3


def test_strict_policy_refuses_a_disabled_step():
    from pipeline.core.config import ConfigError, validate_config

    with pytest.raises(ConfigError, match="pii.kvkk: strict needs the PII step"):  # the config, not the step
        validate_config({"pii": {"enabled": False, "kvkk": "strict"}})
    # with PII off the step is not in phase 3's list (tests/runner/test_phases_contract.py): no pass-through
    from pipeline.core.config import PrepareConfig
    from pipeline.runner.steps import process_steps

    off = PrepareConfig(inputs=["x"], out="o", pii={"enabled": False})
    assert "pii" not in {planned.cls.name for planned in process_steps(off)}


# ------------------------------------------------------------------------------------------ no leaks

def test_no_planted_value_in_outputs_counters_summary_or_errors(caplog):
    caplog.set_level("DEBUG")
    batch = planted_batch()
    for operator in ("placeholder", "mask", "pseudonym"):
        out, stats = run(batch, operator=operator)
        assert_no_planted(dump(out), f"output/{operator}")
        assert_no_planted(dump(stats.to_dict()), f"stats/{operator}")
        assert_no_planted(dump(kvkk_summary(stats.counters, PiiConfig(operator=operator))), f"summary/{operator}")
    with pytest.raises(PiiPolicyError) as err:
        run(batch + [text_record("I spoke with Sarah yesterday.")], kvkk="strict", score_threshold=0.95,
            strict_score=0.5)
    assert_no_planted(str(err.value), "strict error")
    assert_no_planted(caplog.text, "log")


def test_internal_errors_name_no_content(monkeypatch):
    from pipeline.data.pii import step as step_mod

    def boom(*a, **k):
        raise RuntimeError(f"failed on {PLANTED['tckn']}")

    monkeypatch.setattr(step_mod, "detect_language", boom)
    monkeypatch.delenv("PREPARE_DEBUG", raising=False)
    with pytest.raises(step_mod.PiiStepError) as err:
        run([text_record(f"TC {PLANTED['tckn']}")])
    assert PLANTED["tckn"] not in str(err.value) and err.value.__cause__ is None


# ------------------------------------------------------------------------------------------ summary

def test_kvkk_summary_from_summed_shard_counters():
    first, second = PiiStep(PiiConfig(), salt=SALT), PiiStep(PiiConfig(), salt=SALT)
    first(planted_batch()[:2])
    second(planted_batch()[2:])
    total = StageStats("pii").merge(first.stats).merge(second.stats)
    cfg = PiiConfig(operators={"PERSON": "pseudonym"})
    s = kvkk_summary(total.counters, cfg)
    found = s["personal_data_found"]
    assert found["total"] == sum(found["by_type"].values()) and found["by_type"]["PERSON"] == 3
    assert found["by_language"]["ru"]["INN"] == 1
    assert s["actions"]["per_type"]["PERSON"] == "pseudonym" and s["actions"]["per_type"]["TCKN"] == "placeholder"
    topics = {r["topic"] for r in s["residual_risk"]["items"]}
    assert {"PERSON_latin", "PERSON_ru", "ADDRESS", "pseudonym"} <= topics
    assert s["residual_risk"]["overall"] == "medium"
    assert s["fields_stripped"] == {"agent_name": 1, "x_email": 1}
    json.dumps(s)  # serializable as report.json's "pii" section
    off = kvkk_summary({}, PiiConfig(enabled=False))
    assert off["residual_risk"]["overall"] == "high"


def test_kvkk_section_of_report_md_is_whole_and_readable():
    """report.md's KVKK section is a table of every type found by language with its action, then the risks:
    nothing cut off, however many types a run finds (the JSON dump it replaces was cut at 4,000 characters)."""
    from pipeline.data.pii import ENTITY_TYPES, render_kvkk_markdown

    counters = {"entities": {}, "languages": {"tr": {}, "ru": {}, "en": {}}, "actions": {"placeholder": 0},
                "methods": {"PERSON": {"gazetteer": 7, "natasha": 5}}, "records_with_pii": 40,
                "fields_stripped": {"email": 3}, "residual": {"PASSPORT": 2}, "records_by_language": {"tr": 9}}
    for k, ent in enumerate(ENTITY_TYPES):
        for lang in ("tr", "ru", "en"):
            counters["languages"][lang][ent] = k + 1
        counters["entities"][ent] = 3 * (k + 1)
        counters["actions"]["placeholder"] += 3 * (k + 1)
    md = render_kvkk_markdown(kvkk_summary(counters, PiiConfig(operators={"EMAIL": "mask"})))
    for k, ent in enumerate(ENTITY_TYPES):
        action = "mask" if ent == "EMAIL" else "placeholder"
        assert f"| {ent} | {3 * (k + 1)} | {k + 1} | {k + 1} | {k + 1} | {action} |" in md
    assert "- How names were found: PERSON gazetteer 7, PERSON natasha 5" in md
    assert "- Candidates left below the threshold: PASSPORT 2" in md
    assert md.rstrip().endswith("|") and "| quasi | medium |" in md  # the risk table, last and whole
    assert "| special | medium | KVKK art. 6 special categories" in md


def test_anonymizer_engine_and_splice_agree():
    """The step splices replacements itself (12x cheaper); presidio-anonymizer gives the same text."""
    from pipeline.data.pii.engine import get_detector, resolve
    from pipeline.data.pii.operators import Operators

    text = f"Merhaba, ben {PLANTED['name_tr']}. TC {PLANTED['tckn']}, tel {PLANTED['phone']}, {PLANTED['email']}"
    kept, _ = resolve(get_detector(("tr", "ru", "en")).detect([(text, "tr")])[0], 0.5)
    ops = Operators("pseudonym", {"TCKN": "mask", "EMAIL": "placeholder"}, SALT)
    assert len(kept) == 4
    assert ops.apply(text, kept, "tr") == ops.splice(text, kept, "tr")


def test_generated_evaluation_labels_match_their_text():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "pii"))
    from generate import field_texts, generate, long_chats

    rows = generate(30, seed=3)
    assert {r["lang"] for r in rows} == {"tr", "ru", "en"}
    chats = long_chats(rows, turns=4)  # 10 records a language: two chats each, two records left over
    assert [len(c["record"]["messages"]) for c in chats] == [4] * 6
    assert sum(len(c["labels"]) for c in chats) == sum(len(r["labels"]) for r in rows if r in _chatted(rows, 4))
    for row in rows + chats:
        texts = field_texts(row["record"])
        for lab in row["labels"]:
            assert texts[lab["field"]][lab["start"]:lab["end"]] == lab["value"]


def _chatted(rows, turns):
    """The records long_chats() takes: the first multiple of `turns` of each language."""
    out = []
    for lang in ("tr", "ru", "en"):
        of_lang = [r for r in rows if r["lang"] == lang]
        out += of_lang[:len(of_lang) // turns * turns]
    return out


# ------------------------------------------------------------------------------------------ issue 20: keys and names

GLUED = "27384619550"  # a valid TCKN
CARD = "4111 1111 1111 1111"


def transformers_record():
    """The canonical record in transformers' tool-use form: tool calls {"type", "id", "function": {"name",
    "arguments": {object}}}, tool results with "name" and "tool_call_id", and a `tools` column."""
    p = PLANTED
    msgs = [
        {"role": "user", "content": "Müşteri kaydımı bulur musunuz?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "id": f"call_{GLUED}", "function": {
                "name": f"lookup_{GLUED}",
                "arguments": {"email": p["email"], "query": f"TC {p['tckn']}", p["email"]: {"note": "ok"},
                              "ids": [int(p["tckn"]), 42], "limit": 5}}}]},
        {"role": "tool", "tool_call_id": f"call_{GLUED}", "name": f"lookup_{GLUED}",
         "content": '{"status": "found"}'},
        {"role": "assistant", "content": "Kaydınız bulundu."},
    ]
    tools = [{"type": "function", "function": {
        "name": f"lookup_{GLUED}", "description": f"Looks up a customer; escalate to {p['phone']}.",
        "parameters": {"type": "object", "properties": {p["email"]: {"type": "string"},
                                                        "query": {"type": "string"}}}}}]
    return {"id": "n", "kind": "chat", "messages": msgs, "tools": tools, "text": None,
            "source": {"file": "f", "line": 3}, "meta": "{}", "_order": 7}


def test_tool_call_names_and_tool_result_names_are_scanned():
    """Old shape: the call's name and the tool result's name (before, a tool turn's name was skipped)."""
    rec = chat("Kayıt?", "Bakıyorum.", "x")
    rec["messages"][1]["tool_calls"] = [{"name": f"lookup_{GLUED}", "arguments": "{}"}]
    rec["messages"][2] = {"role": "tool", "name": f"crm_{GLUED}", "content": "bulundu"}
    out, stats = run([rec])
    assert out[0]["messages"][1]["tool_calls"] == [{"name": "lookup_<TCKN>", "arguments": "{}"}]
    assert out[0]["messages"][2] == {"role": "tool", "name": "crm_<TCKN>", "content": "bulundu"}
    assert stats.counters["entities"]["TCKN"] == 2


def test_transformers_tool_shape_and_tools_column_are_walked_whole():
    rec = transformers_record()
    before = dump(rec)
    out, _ = run([rec])
    assert dump(rec) == before  # the input is not changed
    o = out[0]
    call = o["messages"][1]["tool_calls"][0]
    assert call["id"] == "call_<TCKN>" and call["type"] == "function"
    assert call["function"]["name"] == "lookup_<TCKN>"
    # arguments stay an object: values by field name and by content, keys holding personal data replaced
    assert call["function"]["arguments"] == {"email": "<EMAIL>", "query": "TC <TCKN>", "<EMAIL>": {"note": "ok"},
                                             "ids": ["<TCKN>", 42], "limit": 5}
    assert list(call["function"]["arguments"]) == ["email", "query", "<EMAIL>", "ids", "limit"]  # order kept
    assert o["messages"][2] == {"role": "tool", "tool_call_id": "call_<TCKN>", "name": "lookup_<TCKN>",
                                "content": '{"status": "found"}'}
    fn = o["tools"][0]["function"]
    assert fn["name"] == "lookup_<TCKN>" and fn["description"] == "Looks up a customer; escalate to <PHONE>."
    assert list(fn["parameters"]["properties"]) == ["<EMAIL>", "query"]
    assert o["_order"] == 7 and o["source"] == rec["source"] and o["id"] == "n"
    assert_no_planted(dump(o), "transformers shape")
    assert GLUED not in dump(o)


def test_meta_keys_and_csv_headers_holding_personal_data_are_replaced():
    """CSV headers become meta keys. Keys are replaced where they hold personal data, in their position;
    a replacement that collides with another key gets "_" appended, and every value is kept."""
    p = PLANTED
    meta = json.dumps({"channel": "web", GLUED: "a", p["tckn"]: "b", p["email"]: 1, f"not\n{p['phone']}": 2,
                       "Ayşe Yılmaz": "müşteri", "nested": {f"tc{GLUED}": [{CARD: 3}]}}, ensure_ascii=False)
    out, _ = run([text_record("Kayıt notları.", meta=meta)])
    got = json.loads(out[0]["meta"])
    assert got == {"channel": "web", "<TCKN>": "a", "<TCKN>_": "b", "<EMAIL>": 1, "not\n<PHONE>": 2,
                   "<PERSON>": "müşteri", "nested": {"tc<TCKN>": [{"<CREDIT_CARD>": 3}]}}
    assert list(got) == ["channel", "<TCKN>", "<TCKN>_", "<EMAIL>", "not\n<PHONE>", "<PERSON>", "nested"]
    assert_no_planted(out[0]["meta"], "meta keys")
    # a key that already reads like a replacement keeps its name; the replaced ones move aside
    out, _ = run([text_record("Kayıt notları.", meta=json.dumps({GLUED: "a", "*" * 11: "c", p["tckn"]: "b"}))],
                 operator="mask")
    assert json.loads(out[0]["meta"]) == {"***********_": "a", "***********": "c", "***********__": "b"}


def test_meta_that_is_a_json_number_or_holds_json_text_is_scanned():
    out, _ = run([text_record("a b c d", meta=GLUED),
                  text_record("a b c d", meta=json.dumps({"raw": json.dumps({"tckn": int(GLUED), "k": "v"})}))])
    assert out[0]["meta"] == "<TCKN>"
    assert json.loads(json.loads(out[1]["meta"])["raw"]) == {"tckn": "<TCKN>", "k": "v"}
    # parsed, a value stands apart from its key: the field-name rules stand in for the key as context
    out, _ = run([text_record("a b c d", meta=json.dumps({"raw": json.dumps({"inn": "7707083893", "n": "x"})}))])
    assert json.loads(json.loads(out[0]["meta"])["raw"]) == {"inn": "<INN>", "n": "x"}


@pytest.mark.parametrize("operator", ["placeholder", "mask", "pseudonym"])
def test_every_written_string_is_clean_under_each_operator(operator):
    rec = transformers_record()
    rec["meta"] = json.dumps({GLUED: PLANTED["email"], "Invoice number": f"ref {CARD}"})
    out, _ = run([rec, text_record(f"write to name at example dot org, TC{GLUED}, card 4111  1111  1111  1111")],
                 operator=operator)
    text = dump(out)
    assert_no_planted(text, operator)
    compact = text.replace(" ", "")
    assert GLUED not in compact and CARD.replace(" ", "") not in compact and "name at example dot org" not in text


def test_json_text_nested_deep_inside_a_string_is_analyzed_as_text():
    """The reader bounds a record's nesting, not that of JSON inside its strings: parsed, 600 objects deep
    would take the walk past Python's recursion limit (the step failed, and the run with it)."""
    deep = '{"k": ' * 600 + f'"{GLUED}"' + "}" * 600
    rec = transformers_record()
    rec["tools"][0]["function"]["description"] = deep
    rec["messages"][1]["tool_calls"][0]["function"]["arguments"] = {"blob": deep}
    out, _ = run([text_record("a b c d", meta=json.dumps({"raw": deep})), rec])
    assert GLUED not in dump(out)
    assert json.loads(out[0]["meta"])["raw"] == '{"k": ' * 600 + '"<TCKN>"' + "}" * 600
