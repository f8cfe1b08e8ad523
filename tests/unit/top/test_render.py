"""The lines ``dcgm-collector top`` draws, from a known state: exact text, and a short spike kept visible."""

from __future__ import annotations

from dcgm_collector.top.metrics import Process
from dcgm_collector.top.model import NodeState
from dcgm_collector.top.render import View, clock_event_words, process_lines, screen, snapshot, sparkline

T0 = 1_800_000_000_000_000   # µs
SECOND = 1_000_000


def piece(field_id: int, samples: list[list], gpu: str = "0", **labels: str) -> dict:
    return {"labels": {"gpu": gpu, "UUID": f"GPU-{gpu}", "modelName": "NVIDIA H100 80GB HBM3", "hostname": "node7",
                       **labels},
            "field_id": field_id, "samples": samples}


def spiky_node() -> NodeState:
    """One H100 sampled at 10 Hz for a minute: 5 % utilisation but for a 300 ms burst to 100 % at 3 s."""
    node = NodeState()
    util = [[T0 + i * 100_000, 100 if 30 <= i < 33 else 5] for i in range(600)]
    node.ingest([piece(203, util), piece(252, [[T0, 20480]]), piece(251, [[T0, 61440]]),
                 piece(155, [[T0, 350.4]]), piece(164, [[T0, 700]]), piece(150, [[T0, 61]]),
                 piece(100, [[T0, 1755]]), piece(112, [[T0, 0x24]])])
    node.served = frozenset({203, 252, 251, 155, 164, 150, 100, 112, 230})
    node.processes = [Process((0, None), "4242", "python3", 8 * 2**30, 93.0, "train-7")]
    node.node_health = "OK"
    return node


def test_the_screen_of_a_known_state():
    lines = screen(spiky_node(), View("http://node7:9400"), 100, 11)
    spark = "▁" * 4 + "█" + "▁" * 73
    assert lines == [
        "dcgm-collector top  http://node7:9400  node7  1 GPU  span 1m  sort gpu  health OK",
        "",
        ">GPU 0    NVIDIA H100 80GB HBM3  util   5%  fb 20.0/80.0 GiB  power  350/700 W",
        "          temp 61 C  mem - C  sm 1755 MHz  health -  throttle: power cap, SW thermal  xid: none",
        f"          util   1m |{spark}|",
        "",
        "      PID GPU      NAME                FB MiB  SM %  POD/JOB",
        "     4242 0        python3               8192    93  train-7",
        "",
        "",
        "http://node7:9400  refresh -  ok  | q quit  s sort  up/down 0-9 GPU  +/- span  h help",
    ]
    assert all(len(line) <= 100 for line in lines)


def test_the_spike_is_kept_by_the_largest_sample_of_each_column():
    """Five samples a column: the 300 ms burst is a full block, where a mean (62 %) or the last sample is not."""
    samples = [(T0 + i * 100_000, 100.0 if 30 <= i < 33 else 5.0) for i in range(60)]
    assert sparkline(samples, T0 + 6 * SECOND, 6 * SECOND, 12, 100.0) == "▁▁▁▁▁▁█▁▁▁▁▁"


def test_a_column_without_samples_is_blank_and_heights_are_eighths():
    samples = [(T0, 0.0), (T0 + SECOND, 30.0), (T0 + 2 * SECOND, 50.0), (T0 + 4 * SECOND, 100.0),
               (T0 + 5 * SECOND, None)]
    assert sparkline(samples, T0 + 6 * SECOND, 6 * SECOND, 6, 100.0) == "▁▃▅ █ "


def test_clock_event_reasons_in_words():
    assert clock_event_words(0x4) == "power cap"
    assert clock_event_words(0x24) == "power cap, SW thermal"
    assert clock_event_words(0x1000 | 0x40) == "HW thermal, 0x1000"
    assert clock_event_words(0) == "none"
    assert clock_event_words(None) == "-"


def test_fields_the_collector_does_not_serve_show_as_a_dash():
    node = NodeState()
    node.ingest([piece(203, [[T0, 40], [T0 + SECOND, 42]])])
    node.served = frozenset({203})
    text = snapshot(node, View("http://node7:9400"), width=100)
    assert text.splitlines()[2:4] == [
        " GPU 0    NVIDIA H100 80GB HBM3  util  42%  fb -/- GiB  power    -/- W",
        "          temp - C  mem - C  sm - MHz  health -  throttle: -  xid: -",
    ]
    assert "processes: - (the collector serves no DCGM_EXP_PROCESS_* series: run it with --processes)" in text
    assert "\x1b" not in text


def test_mig_instances_are_blocks_of_their_own_and_processes_name_them():
    node = NodeState()
    node.ingest([piece(203, [[T0, 10]], gpu="1", GPU_I_ID="3"), piece(203, [[T0, 90]], gpu="1")])
    node.processes = [Process((1, "3"), "77", "infer", 2 * 2**30, None, "")]
    text = snapshot(node, View("http://node7:9400", sort="util"), width=90)
    names = [line.split()[0:2] for line in text.splitlines() if line.startswith(" GPU")]
    assert names == [["GPU", "1"], ["GPU", "1/3"]]
    assert process_lines(node, 90, 3) == [
        "      PID GPU      NAME                FB MiB  SM %  POD/JOB",
        "       77 1/3      infer                 2048     -  -",
    ]


def test_the_status_line_names_the_error_and_the_rate():
    view = View("https://node7:9400", refresh_s=0.1, error="https://node7:9400: 401 Unauthorized (give --user and "
                                                            "--password)")
    assert screen(NodeState(), view, 160, 4)[-1] == (
        "https://node7:9400  refresh 10 Hz  error: https://node7:9400: 401 Unauthorized (give --user and --password)"
        "  | q quit  s sort  up/down 0-9 GPU  +/- span  h help")


def test_the_detail_view_charts_each_reading_over_the_span():
    lines = screen(spiky_node(), View("http://node7:9400", detail=True), 80, 16)
    width = 80 - len("  util %        5 max    100 ") - 2
    assert lines[2].startswith(">GPU 0    NVIDIA H100 80GB HBM3")
    assert lines[4] == "          GPU-0  -"
    # each column the largest sample of its slice; power against its 700 W limit, one sample at the start
    assert lines[6:8] == [f"  util %        5 max    100 |▁▁█{'▁' * (width - 3)}|",
                          f"  power W     350 max    350 |▅{' ' * (width - 1)}|"]
    assert lines[12:14] == ["      PID GPU      NAME                FB MiB  SM %  POD/JOB",
                            "     4242 0        python3               8192    93  train-7"]


def test_a_shorter_span_leaves_the_spike_out():
    lines = screen(spiky_node(), View("http://node7:9400", span_s=30), 100, 11)
    assert lines[4] == f"          util  30s |{'▁' * 78}|"


def test_columns_narrower_than_the_sampling_interval_hold_the_sample_before_them():
    samples = [(T0 + i * SECOND, 100.0) for i in range(4)]       # 1 Hz, columns of 0.5 s
    assert sparkline(samples, T0 + 4 * SECOND, 4 * SECOND, 8, 100.0) == "█ █ █ █ "
    assert sparkline(samples, T0 + 4 * SECOND, 4 * SECOND, 8, 100.0, hold_us=1_500_000) == "████████"
    # past the hold the line goes blank: the collector stopped sampling
    assert sparkline(samples, T0 + 6 * SECOND, 6 * SECOND, 12, 100.0, hold_us=1_500_000) == "█" * 10 + "  "
