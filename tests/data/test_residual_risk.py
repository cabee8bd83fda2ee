"""The residual-risk probe (pipeline/data/pii/residual.py): names planted into copies of the run's records measure
what the PII step leaves; the figure is reproducible, the copies reach no file, S3 object or log line, and
kvkk: strict refuses a run whose upper bound is over pii.residual_max before any shard is written."""
import copy
import json
import re

import boto3
import pyarrow.parquet as pq
import pytest

from pipeline.core.config import PrepareConfig
from pipeline.core.schemas import validate
from pipeline.data.pii.residual import ResidualProbe, check_residual, measured_line, residual_summary, wilson
from pipeline.runner import run_prepare

pytestmark = pytest.mark.integration

TR = ["Siparişim hâlâ gelmedi, kargo takip numarası çalışmıyor.", "Faturamda iki kez ücret alınmış görünüyor.",
      "Şifremi değiştirmek istiyorum ama e-posta gelmiyor.", "İade talebim ne durumda acaba?"]
RU = ["Мой заказ до сих пор не доставлен, трек-номер не работает.", "С карты списали деньги дважды.",
      "Не могу сменить пароль, письмо не приходит.", "Как оформить возврат товара?"]
EN = ["my order still has not arrived and the tracking number does not work.", "I was charged twice this month.",
      "I cannot reset my password, the email never comes.", "HOW DO I RETURN AN ITEM I BOUGHT LAST WEEK?"]


def write_inputs(d):
    """Support chats in tr/ru/en, one in lower case and one in ALL CAPS among them, without any name."""
    d.mkdir()
    rows = []
    for lang, lines, answer in (("tr", TR, "Hemen kontrol ediyorum, kayıt numaranız {n}."),
                                ("ru", RU, "Сейчас проверю, номер обращения {n}."),
                                ("en", EN, "Let me check that for you, ticket {n}.")):
        for n in range(12):
            rows.append({"messages": [{"role": "user", "content": f"{lines[n % len(lines)]} ({lang}-{n})"},
                                      {"role": "assistant", "content": answer.format(n=1000 + n)}]})
    with open(d / "chats.jsonl", "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return d


def config(tmp_path, out: str, **pii) -> PrepareConfig:
    cfg = PrepareConfig(inputs=[str(tmp_path / "in")], out=str(tmp_path / out), workers=1)
    cfg.clean.min_chars = 1
    cfg.dedup.enabled = False  # the chats share their sentences
    cfg.lengths.enabled = False
    cfg.estimate.enabled = False
    for key, value in pii.items():
        setattr(cfg.pii, key, value)
    return cfg


@pytest.fixture
def planted(monkeypatch):
    """Every phrase the probe plants and the name words in it, as the probe writes them."""
    seen: list[tuple[list[str], str]] = []
    original = ResidualProbe._phrase

    def spy(self, lang, template, rng):
        words, phrase = original(self, lang, template, rng)
        seen.append((list(words), phrase))
        return words, phrase
    monkeypatch.setattr(ResidualProbe, "_phrase", spy)
    return seen


def written_texts(run_dir):
    """Every file under the run directory as text; Parquet shards decoded (they are compressed)."""
    for path in run_dir.rglob("*"):
        if path.is_file():
            if path.suffix == ".parquet":
                yield str(path), json.dumps(pq.read_table(path).to_pylist(), ensure_ascii=False, default=str)
            else:
                yield str(path), path.read_bytes().decode("utf-8", "replace")


def s3_texts(bucket):
    s3 = boto3.client("s3")
    for obj in s3.list_objects_v2(Bucket=bucket).get("Contents", []):
        body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
        if obj["Key"].endswith(".parquet"):
            import io

            body = json.dumps(pq.read_table(io.BytesIO(body)).to_pylist(), ensure_ascii=False, default=str).encode()
        yield f"s3://{bucket}/{obj['Key']}", body.decode("utf-8", "replace")


def assert_nowhere(seen, texts: dict, input_text: str):
    phrases = {p for _, p in seen} | {p.upper() for _, p in seen} | {p.lower() for _, p in seen}
    words = {w for ws, _ in seen for w in ws if len(w) >= 4 and w.casefold() not in input_text.casefold()}
    assert phrases and words
    for where, text in texts.items():
        for p in phrases:
            assert p not in text, where
        for w in words:
            assert not re.search(rf"(?<!\w){re.escape(w)}(?!\w)", text), where


def test_figure_is_reproducible_and_the_copies_are_written_nowhere(tmp_path, bucket, planted, capfd, caplog):
    inputs = write_inputs(tmp_path / "in")
    cfg = config(tmp_path, "run")
    cfg.s3 = f"s3://{bucket}/run"
    first = run_prepare(cfg, progress=False)
    measured = first.report["pii"]["residual_risk"]["measured"]
    # about residual_sample copies of the 36 records, in each language, with names left to find if leaked
    assert 250 <= measured["copies"] <= 350 and measured["planted"] == 2 * measured["copies"]
    assert set(measured["by_language"]) == {"tr", "ru", "en"}
    assert measured["names_left"] > 0 and 0 < measured["recall"] < 1
    est = measured["records_with_name_left"]
    assert est["low"] <= est["share"] <= est["high"] and est["records"] == 36
    validate(first.report, "report")

    texts = dict(written_texts(first.run_dir))
    texts.update(s3_texts(bucket))
    assert any(k.startswith("s3://") and k.endswith(".parquet") for k in texts)
    captured = capfd.readouterr()
    texts["<stdout/stderr>"] = captured.out + captured.err
    texts["<log>"] = caplog.text
    input_text = (inputs / "chats.jsonl").read_text(encoding="utf-8")
    assert_nowhere(planted, texts, input_text)
    # the shards hold the user's records as the PII step left them: the probe's copies are not among them
    rows = [r for p in first.run_dir.rglob("*.parquet") if "dedup" not in p.name for r in pq.read_table(p).to_pylist()]
    assert len(rows) == 36

    planted.clear()
    again = run_prepare(config(tmp_path, "again"), progress=False)
    assert again.report["pii"]["residual_risk"]["measured"] == measured
    assert_nowhere(planted, dict(written_texts(again.run_dir)), input_text)


def test_strict_over_residual_max_fails_before_any_shard(tmp_path, bucket, planted, capfd):
    from pipeline.cli.errors import describe_error

    write_inputs(tmp_path / "in")
    cfg = config(tmp_path, "run", kvkk="strict", residual_max=0.0)  # any upper bound is over 0
    cfg.s3 = f"s3://{bucket}/run"
    with pytest.raises(Exception) as err:
        run_prepare(cfg, progress=False)
    message, code = describe_error(err.value)
    assert "pii.residual_max=0" in message and "\n" not in message and code == 3  # the strict policy's exit
    run = tmp_path / "run"
    assert not [p for p in run.rglob("*.parquet") if "work" not in p.relative_to(run).parts]  # no shard
    assert not (run / "manifest.json").exists() and not (run / "report.json").exists()
    assert "Contents" not in boto3.client("s3").list_objects_v2(Bucket=bucket)
    assert_nowhere(planted, {"<error>": message, "<stderr>": capfd.readouterr().err}, "")


def test_a_probe_passes_the_batch_on_untouched_and_its_seed_draws_the_copies():
    cfg = PrepareConfig(inputs=["x"])
    batch = [{"id": f"r{n}", "kind": "chat", "meta": '{"lang":"en"}',
              "messages": [{"role": "user", "content": f"My order {n} has not arrived. Where is it?"}]}
             for n in range(40)]
    before = copy.deepcopy(batch)
    counts = []
    for seed in (0, 0, 1):
        probe = ResidualProbe(cfg.pii, b"salt", seed, 0.5)
        assert probe(batch) is batch and batch == before
        counts.append(probe.stats.counters["en"])
    assert counts[0] == counts[1] and counts[0] != counts[2]


def test_summary_schema_and_strict_threshold():
    cfg = PrepareConfig(inputs=["x"]).pii
    probe = {"tr": {"copies": 100, "copies_with_name_left": 3, "planted": 200, "left": 3,
                    "shapes": {"cue": {"planted": 120, "left": 1}, "greeting": {"planted": 80, "left": 2}}}}
    measured = residual_summary(probe, {"tr": 5000, "en": 1000}, cfg)
    est = measured["records_with_name_left"]
    assert measured["recall"] == 0.985 and est["share"] == 0.03 and est["records"] == 6000
    assert (est["low"], est["high"]) == tuple(round(x, 4) for x in wilson(3, 100))
    assert measured["by_language"]["tr"]["by_shape"]["greeting"]["recall"] == 0.975
    assert "3.00% of 100 probe copies" in measured_line(measured) and "180 of 6,000" in measured_line(measured)
    report = {"counts": {"input": 0, "kept": 0, "rows": 0, "quarantined": 0, "quarantined_by_reason": {},
                         "dropped": {}, "splits": {"train": 0, "validation": 0}},
              "files": {}, "unreadable_inputs": [], "stages": {}, "shards": {"count": 0, "bytes": 0},
              "split": {"method": "hash"}, "pii": {"residual_risk": {"measured": measured}}}
    validate(report, "report")
    off = cfg.model_copy(update={"residual_sample": 0})
    report["pii"]["residual_risk"]["measured"] = residual_summary(None, {}, off)
    validate(report, "report")
    assert wilson(0, 100)[1] == pytest.approx(0.037, abs=0.001)  # the known 95% Wilson bound
    check_residual(cfg.model_copy(update={"kvkk": "strict", "residual_max": 0.1}), measured)  # 8.5% < 10%: passes
    with pytest.raises(Exception, match="pii.residual_max=0.05"):
        check_residual(cfg.model_copy(update={"kvkk": "strict"}), measured)
    check_residual(cfg, measured)  # kvkk: report never fails on it
