"""LLaMA-Factory's data folder as users copy it: its demo datasets (the real files in ../shared/peer_formats, as
they are), its dataset registry, README, preference and multimodal demos (built here in their published shapes),
plus what a download or an export does to files (a cut .gz, a Windows-1254 text). `prepare run --skip-unreadable`
finishes and its summary names every file it skipped, cut or re-encoded."""
import gzip
import json
import shutil

import pytest
from conftest import PEER_FORMATS, prepare_in_process

pytestmark = pytest.mark.slow  # a whole run through the CLI's main()

DEMOS = ("alpaca_en_demo.json", "c4_demo.jsonl", "dataset_info.json", "glaive_toolcall_en_demo.json", "identity.json",
         "wiki_demo.txt", "README.md")


def _dpo_rows(n):  # dpo_en_demo.json: sharegpt conversations with a chosen and a rejected answer
    return [{"conversations": [{"from": "human", "value": f"Which plan suits a team of {i} people?"}],
             "chosen": {"from": "gpt", "value": f"The team plan covers {i} seats."},
             "rejected": {"from": "gpt", "value": "No idea."}} for i in range(n)]


def _kto_rows(n):  # kto_en_demo.json: messages with a desirability label
    return [{"messages": [{"role": "user", "content": f"Reset my password for account {i}."},
                          {"role": "assistant", "content": "I sent a reset link to your e-mail address."}],
             "label": i % 2 == 0} for i in range(n)]


def _mllm_rows(n):  # mllm_demo.json: an <image> placeholder and the image's path
    return [{"messages": [{"role": "user", "content": f"<image>What is in picture {i}?"},
                          {"role": "assistant", "content": "A parcel on a doorstep."}],
             "images": [f"mllm_demo_data/{i}.jpg"]} for i in range(n)]


@pytest.fixture
def data_folder(tmp_path):
    if not PEER_FORMATS.is_dir():
        pytest.skip(f"{PEER_FORMATS} is not there")
    d = tmp_path / "data"
    d.mkdir()
    for name in DEMOS:
        shutil.copy(PEER_FORMATS / name, d / name)
    for name, rows in (("dpo_en_demo.json", _dpo_rows(10)), ("kto_en_demo.json", _kto_rows(10)),
                       ("mllm_demo.json", _mllm_rows(6))):
        (d / name).write_text(json.dumps(rows, indent=2))
    lines = "".join(json.dumps(row) + "\n" for row in json.loads((PEER_FORMATS / "identity.json").read_text()))
    whole = gzip.compress(lines.encode() * 20)
    (d / "identity_cut.jsonl.gz").write_bytes(whole[: len(whole) * 2 // 3])
    (d / "destek_notlari.txt").write_bytes("Kargo takip numarası çalışmıyor, şifre değiştirme ekranı açılmıyor.\n"
                                          "Müşteri iade talebini iptal etti, ödeme hâlâ görünmüyor.\n"
                                          .encode("cp1254"))
    return d


def test_a_run_over_llama_factorys_data_folder_names_every_file_it_skipped_cut_or_re_encoded(data_folder, tmp_path):
    proc = prepare_in_process("run", str(data_folder), "--out", str(tmp_path / "run"), "--skip-unreadable",
                              "--no-pii", "--no-estimate", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    notes = {line.strip().split(":", 1)[0].rsplit("/", 1)[-1]: line for line in proc.stdout.splitlines()
             if line.startswith("  ") and "data/" in line}
    expected = {"dataset_info.json": "LLaMA-Factory dataset registry", "README.md": "unsupported",
                "dpo_en_demo.json": "formats.preference", "kto_en_demo.json": "formats.preference",
                "identity_cut.jsonl.gz": "truncated", "destek_notlari.txt": "re-encoded from cp1254"}
    for name, words in expected.items():
        assert words in notes.get(name, ""), (name, proc.stdout)
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    files = report["files"]
    assert files["data/mllm_demo.json"]["quarantined_by_reason"] == {"multimodal": 6}
    # glaive's one record whose 11,607-token prompt leaves no trainable token is dropped, counted, not fatal
    assert report["counts"]["dropped"].get("untrained", 0) >= 1
    assert report["lengths"]["untrained"]["policy"] == "drop"
    # wiki_demo.txt's documents are chunked: the max length comes from the chats, not whole documents
    assert report["lengths"]["max_seq_len"] <= 4096
    assert report["lengths"]["chunking"]["chunks"] > report["lengths"]["chunking"]["records"]
