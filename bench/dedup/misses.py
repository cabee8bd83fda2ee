"""The anatomy of the planted near copies that a bench run did not remove: why each was missed.

    .venv/bin/python bench/dedup/misses.py --data-dir /tmp/dedup_bench/20000_0 --work-dir /tmp/dedup_bench/work_20000_0

Reads the corpus truth (``*.truth`` beside the shards), the run's key files and removed.parquet (run.py writes
both into its work dir). Per missed copy with planted Jaccard >= --min-jaccard: its planted word-5-gram
Jaccard with its original, the MinHash estimate from the two signatures, the LSH bands they share, the
shingles of the copy (its length) and, where the key files have them, the Jaccard of the two shingle sketches.
A miss with shared bands but an estimate under the threshold is a verification miss; one with no shared band
an LSH miss.
"""
from __future__ import annotations

import argparse
import glob
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import corpus as C  # noqa: E402


def _keys_by_order(work_dir: Path) -> pa.Table:
    table = pa.concat_tables([pq.read_table(p) for p in sorted(glob.glob(str(work_dir / "keys-*.parquet")))])
    return table.take(pa.compute.sort_indices(table, [("_order", "ascending")]))


def main(argv=None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--work-dir", required=True)
    ap.add_argument("--min-jaccard", type=float, default=0.85)
    ap.add_argument("--threshold", type=float, default=0.8)
    args = ap.parse_args(argv)
    from pipeline.data.dedup import signature_array
    from pipeline.data.dedup.sketch import sketch_arrays

    truth = pa.concat_tables([pq.read_table(p) for p in sorted(glob.glob(f"{args.data_dir}/*.truth"))])
    order, typ, fam, jac = (truth.column(c).to_numpy() for c in ("order", "type", "family", "jaccard"))
    removed = set(pq.read_table(Path(args.work_dir) / "removed.parquet").column("_order").to_pylist())
    missed = np.flatnonzero((typ == C.T_NEAR) & (jac >= args.min_jaccard)
                            & ~np.isin(order, np.fromiter(removed, np.int64, len(removed))))
    keys = _keys_by_order(Path(args.work_dir))
    key_order = keys.column("_order").to_numpy()
    bands = [c for c in keys.column_names if c.startswith("band_")]
    band_values = np.stack([keys.column(c).to_numpy() for c in bands], axis=1)
    num_perm = keys.schema.field("signature").type.byte_width // 4
    sigs = signature_array(keys.column("signature"), num_perm)
    sketch = sketch_arrays(keys.column("sketch")) if "sketch" in keys.column_names else None
    rows = []
    for i in missed:
        a, b = np.searchsorted(key_order, [order[i], fam[i]])
        row = {"order": int(order[i]), "original": int(fam[i]), "planted_J": round(float(jac[i]), 4),
               "minhash_J": round(float((sigs[a] == sigs[b]).mean()), 4),
               "shared_bands": int((band_values[a] == band_values[b]).sum()),
               "length": int(keys.column("length")[a].as_py())}
        if sketch is not None:
            values, offsets = sketch
            sa, sb = (set(values[offsets[r]:offsets[r + 1]].tolist()) for r in (a, b))
            row["sketch_sizes"] = (len(sa), len(sb))
            row["sketch_J"] = round(len(sa & sb) / max(1, len(sa | sb)), 4)
        rows.append(row)
    verification = sum(r["shared_bands"] > 0 and r["minhash_J"] < args.threshold for r in rows)
    print(f"missed planted near copies with J >= {args.min_jaccard}: {len(rows)} "
          f"(verification misses {verification}, LSH misses {sum(r['shared_bands'] == 0 for r in rows)})")
    for r in rows:
        print(r)
    return rows


if __name__ == "__main__":
    main()
