"""Personal data planted in the input appears in no file the run writes (shards, reports, quarantine,
audit, manifest) and in no log line."""
import json

import pyarrow.parquet as pq

from pipeline.config import PrepareConfig
from pipeline.runner import run_prepare

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
