"""Personal data planted in the input appears in no file the run writes (shards, reports, quarantine,
audit, manifest) and in no log line."""
import json

import pyarrow.parquet as pq
import pytest

from pipeline.core.config import PrepareConfig
from pipeline.runner import run_prepare

pytestmark = pytest.mark.integration

PLANTED = {
    "tckn": "10000000146",
    "tr_phone": "+90 532 123 45 67",
    "tr_iban": "TR330006100519786457841326",
    "email": "ayse.yilmaz@example.com.tr",
    "card": "4111 1111 1111 1111",
    "ru_inn": "500100732259",
    "ru_phone": "+7 912 345-67-89",
    "ip": "203.0.113.77",
}


def write_inputs(d):
    d.mkdir()
    rows = [
        {"instruction": f"Müşteri kaydı: T.C. kimlik no {PLANTED['tckn']}, telefon {PLANTED['tr_phone']}.",
         "output": f"Teşekkürler, iade {PLANTED['tr_iban']} numaralı IBAN'a yapılacak.",
         "email": PLANTED["email"], "customer_name": "Ayşe Yılmaz"},
        {"instruction": f"Please charge card {PLANTED['card']} and mail {PLANTED['email']}",
         "output": f"Charged; the login came from IP {PLANTED['ip']}."},
        {"instruction": f"Мой ИНН {PLANTED['ru_inn']}, телефон {PLANTED['ru_phone']}.",
         "output": "Спасибо, данные проверены."},
    ]
    with open(d / "crm.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        # a broken line holding personal data: quarantined by reference only
        fh.write('{"instruction": "kimlik ' + PLANTED["tckn"] + '", \n')
    return d


def all_written_text(run_dir):
    for path in run_dir.rglob("*"):
        if not path.is_file():
            continue
        if path.suffix == ".parquet":
            yield str(path), json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
        else:
            yield str(path), path.read_bytes().decode("utf-8", "replace")


def test_planted_personal_data_is_nowhere_in_the_output(tmp_path, capfd, caplog):
    inputs = write_inputs(tmp_path / "in")
    cfg = PrepareConfig(inputs=[str(inputs)], out=str(tmp_path / "run"), workers=1)
    cfg.clean.min_chars = 1
    result = run_prepare(cfg, progress=False)
    assert result.report["counts"]["kept"] == 3
    texts = dict(all_written_text(result.run_dir))
    assert any(p.endswith(".parquet") for p in texts) and any(p.endswith("report.json") for p in texts)
    captured = capfd.readouterr()
    texts["<stdout/stderr>"] = captured.out + captured.err
    texts["<log>"] = caplog.text
    for name, value in PLANTED.items():
        compact = value.replace(" ", "").replace("-", "")
        for path, text in texts.items():
            assert value not in text and compact not in text.replace(" ", "").replace("-", ""), (name, path)
    shard_text = "".join(t for p, t in texts.items() if p.endswith(".parquet"))
    assert "<TCKN>" in shard_text or "TCKN" in shard_text
    assert "customer_name" not in shard_text and "Ayşe Yılmaz" not in shard_text


def test_planted_personal_data_is_in_no_prefect_artifact(prefect_api, tmp_path):
    """The flow's artifacts (report, accounting, KVKK summary, lengths, GPU plan) hold counts, never values."""
    from conftest import read_flow_artifacts

    from flows.prepare import prepare

    cfg = PrepareConfig(inputs=[str(write_inputs(tmp_path / "in"))], out=str(tmp_path / "flow"), workers=1)
    cfg.clean.min_chars = 1
    out = prepare(cfg)
    assert out["counts"]["kept"] == 3

    published = [json.dumps(a.data, ensure_ascii=False) + (a.description or "") for a in read_flow_artifacts()]
    assert any("TCKN" in text for text in published)  # the KVKK summary counted what it replaced
    for name, value in PLANTED.items():
        compact = value.replace(" ", "").replace("-", "")
        for text in published:
            assert value not in text and compact not in text.replace(" ", "").replace("-", ""), name


# ------------------------------------------------------------------------------------------ issue 20's shapes

# Each value below reached a shard or the report before (issue 20, item 3). File names hold none of them.
PLANTED_20 = {
    "card_after_reference": "4012 8888 8888 1881",
    "card_after_ref": "5105105105105100",
    "card_after_invoice_number": "4242 4242 4242 4242",
    "card_after_iban": "5555 5555 5555 4444",
    "iban": "TR33 0006 1005 1978 6457 8413 26",
    "card_double_spaces": "3782  822463  10005",
    "tckn_glued_tc": "27384619550",
    "tckn_glued_user": "49825979160",
    "tckn_glued_file": "17483378854",
    "tckn_dotted": "862.328.601.62",
    "email_spelled": "ayse.kaya at example dot org",
    "tckn_tool_name": "39040479668",
    "tckn_tool_result_name": "76972510298",
    "email_meta_key": "mehmet.demir@example.com.tr",
    "name_meta_key": "Mehmet Demir",
    "phone_csv_header": "+90 533 987 65 43",
    "name_csv_header": "Fatma Şahin",
    "email_tools_column": "destek.ekibi@example.net",
}


def write_attack_inputs(d):
    p = PLANTED_20
    d.mkdir()
    chats = [
        {"messages": [
            {"role": "user", "content": f"Payment reference {p['card_after_reference']} was charged twice, and "
                                        f"ref {p['card_after_ref']} too. "
                                        f"Invoice number {p['card_after_invoice_number']}."},
            {"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {
                    "name": f"lookup_{p['tckn_tool_name']}", "arguments": json.dumps({"customer": "self"})}}]},
            {"role": "tool", "tool_call_id": "call_1", "name": f"crm_{p['tckn_tool_result_name']}",
             "content": "{\"status\": \"refund pending\"}"},
            {"role": "assistant", "content": "Both charges are refunded within five days."}],
         "tools": [{"type": "function", "function": {
             "name": f"lookup_{p['tckn_tool_name']}", "description": f"Escalations go to {p['email_tools_column']}.",
             "parameters": {"type": "object", "properties": {"customer": {"type": "string"}}}}}],
         p["email_meta_key"]: "vip"},
        {"messages": [
            {"role": "user", "content": f"IBAN: {p['iban']} {p['card_after_iban']} numaralı karttan çekim oldu. "
                                        f"Kartın diğer yazımı {p['card_double_spaces']} idi."},
            {"role": "assistant", "content": f"Kayıtlar: TC{p['tckn_glued_tc']}, user_{p['tckn_glued_user']}, "
                                             f"belge musteri_{p['tckn_glued_file']}.pdf, kimlik {p['tckn_dotted']}. "
                                             f"Yanıt için write to {p['email_spelled']} please."}],
         p["name_meta_key"]: "müşteri temsilcisi"},  # a key with no digit and no "@" was not scanned
    ]
    with open(d / "chats.jsonl", "w", encoding="utf-8") as fh:
        for row in chats:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        fh.write('{"messages": [{"role": "user", "content": "TC' + p["tckn_glued_tc"] + '"}\n')  # quarantined
    header = f"instruction,output,tel {p['phone_csv_header']}\n"
    (d / "crm.csv").write_text(header + "Siparişim nerede acaba?,Kargoya verildi yarın elinizde olur.,evet\n",
                               encoding="utf-8")
    (d / "notes.csv").write_text(f"instruction,output,{p['name_csv_header']}\n"
                                 "İade ne zaman yapılır?,Beş iş günü içinde hesabınızda olur.,2\n", encoding="utf-8")
    return d


def test_the_attack_shapes_reach_no_output_file_and_no_stdout(tmp_path):
    """A whole run through the CLI's main(): shards, report.json/md, quarantine and the rest of the run directory, and
    --json stdout and stderr hold none of the planted values in any writing (spaces and dashes removed too)."""
    from conftest import prepare_in_process

    inputs = write_attack_inputs(tmp_path / "in")
    proc = prepare_in_process("run", str(inputs), "--out", str(tmp_path / "run"), "--workers", "1", "--no-lengths",
                              "--no-estimate", "--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout)
    assert report["counts"]["kept"] == 4 and report["counts"]["quarantined"] == 1
    run_dir = tmp_path / "run"
    texts = dict(all_written_text(run_dir))
    assert any(p.endswith(".parquet") for p in texts) and any(p.endswith("report.md") for p in texts)
    assert any("quarantine" in p for p in texts)
    texts["<stdout>"], texts["<stderr>"] = proc.stdout, proc.stderr
    for name, value in PLANTED_20.items():
        compact = value.replace(" ", "").replace("-", "").replace(".", "")
        for path, text in texts.items():
            flat = text.replace(" ", "").replace("-", "").replace(".", "").replace("\\t", "")
            assert value not in text and compact not in flat, (name, path)
    shards = "".join(t for p, t in texts.items() if p.endswith(".parquet"))
    for placeholder in ("<CREDIT_CARD>", "<TCKN>", "<EMAIL>", "<IBAN>", "<PHONE>"):
        assert placeholder in shards, placeholder
