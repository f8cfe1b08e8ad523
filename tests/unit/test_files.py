"""Byte counts in messages, as people read them (dcgm_collector.files.size_text)."""

from __future__ import annotations

import pytest

from dcgm_collector.files import read_regular_file, size_text


@pytest.mark.parametrize(("size", "text"), [
    (0, "0 bytes"), (1, "1 byte"), (300, "300 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (64 << 10, "64 KiB"),
    (1 << 20, "1 MiB"), (1 << 30, "1 GiB"), (16 << 30, "16 GiB"), (1536, "1.5 KiB (1536 bytes)"),
    (1_000_000_000, "953.7 MiB (1000000000 bytes)"),
    (3 << 29, "1.5 GiB (1610612736 bytes)"),
])
def test_a_byte_count_is_written_in_the_largest_unit_it_reaches_and_exactly_when_not_whole(size, text):
    assert size_text(size) == text


def test_a_file_over_its_limit_is_refused_with_the_limit_in_people_s_units(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * ((64 << 10) + 1))
    with pytest.raises(OSError) as caught:
        read_regular_file(big, 64 << 10)
    assert str(caught.value) == f"{big}: larger than 64 KiB"
