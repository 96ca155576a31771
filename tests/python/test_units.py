# SPDX-License-Identifier: GPL-2.0-only
"""python/agentcg/units.py against core/units/units_table.json, the table
core/units/units_test.cc feeds to the C++ definition: one language."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentcg import units
from agentcg._errors import AgentcgError

TABLE = json.loads((Path(__file__).resolve().parents[2] / "core" / "units" / "units_table.json").read_text())


@pytest.mark.parametrize("kind,parse", [("duration", units.try_parse_duration_ns),
                                        ("size", units.try_parse_size_bytes)])
def test_table(kind: str, parse) -> None:
    t = TABLE[kind]
    assert len(t["accept"]) > 5 and len(t["reject"]) > 5
    for text, value in t["accept"]:
        assert parse(text) == value, text
    for text in t["reject"]:
        assert parse(text) is None, text


def test_errors_name_the_option_and_the_forms() -> None:
    with pytest.raises(AgentcgError, match=r"--duration: expected a duration with a unit.*got '10'"):
        units.parse_duration_ns("10", "--duration")
    with pytest.raises(AgentcgError, match=r"--mem: expected a size.*got '4gib'"):
        units.parse_size_bytes("4gib", "--mem")


@pytest.mark.parametrize("text,want", [("1-5", [1, 2, 3, 4, 5]), ("1,2,3", [1, 2, 3]), ("1-3,7", [1, 2, 3, 7]),
                                       ("0", [0]), (" 4 , 5 ", [4, 5])])
def test_seed_lists(text, want):
    assert units.try_parse_seeds(text) == want


@pytest.mark.parametrize("text", ["", ",", "5-1", "1-20000", "x", "1-x", "-1", str(2**64), "1.5"])
def test_seed_lists_rejected(text):
    assert units.try_parse_seeds(text) is None
