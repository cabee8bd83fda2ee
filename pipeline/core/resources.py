"""The package's data files (pipeline/resources/): catalogs, calibration points, PII lists and lexicons."""
from __future__ import annotations

from pathlib import Path

RESOURCES = Path(__file__).resolve().parents[1] / "resources"


def resource(*parts: str) -> Path:
    """The path of a file under pipeline/resources/, e.g. resource("pii", "names.json")."""
    return RESOURCES.joinpath(*parts)
