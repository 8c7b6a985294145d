"""Fixtures for partitioned namespace tests: the spec's appendix A model and sample rows."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

APPENDIX_SCHEMA: dict[str, Any] = {
    "fields": [
        {
            "name": "id",
            "nullable": False,
            "type": {"type": "int64"},
            "metadata": {"lance:field_id": "0"},
        },
        {
            "name": "event_date",
            "nullable": True,
            "type": {"type": "date32"},
            "metadata": {"lance:field_id": "1"},
        },
        {
            "name": "country",
            "nullable": True,
            "type": {"type": "utf8"},
            "metadata": {"lance:field_id": "2"},
        },
    ]
}
APPENDIX_SPEC_V1: dict[str, Any] = {
    "id": 1,
    "fields": [
        {
            "field_id": "event_date",
            "source_ids": [1],
            "transform": {"type": "identity"},
            "result_type": {"type": "date32"},
        }
    ],
}
APPENDIX_SPEC_V2: dict[str, Any] = {
    "id": 2,
    "fields": [
        {
            "field_id": "event_year",
            "source_ids": [1],
            "transform": {"type": "year"},
            "result_type": {"type": "int32"},
        },
        {
            "field_id": "country",
            "source_ids": [2],
            "transform": {"type": "identity"},
            "result_type": {"type": "utf8"},
        },
    ],
}


def events(ids: list[int], dates: list[dt.date | None], countries: list[str | None]) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "event_date": pa.array(dates, pa.date32()),
            "country": pa.array(countries, pa.utf8()),
        }
    )


@pytest.fixture
def appendix_schema() -> dict[str, Any]:
    return json.loads(json.dumps(APPENDIX_SCHEMA))


@pytest.fixture
def root(tmp_path: Path) -> str:
    return str(tmp_path / "ns")


def sorted_rows(table: pa.Table, key: str = "id") -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: (r[key] is None, r[key]))
