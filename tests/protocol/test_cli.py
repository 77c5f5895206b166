"""``python -m protocol``: captured bytes -> JSON -> the same bytes, and clean errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner, Result

from protocol.__main__ import main

from .golden_vectors import VECTORS


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def round_trip(api: str, version: int, direction: str, hex_in: str, *extra: str) -> dict:
    decoded = run("decode", "--api", api, "--version", str(version), direction, *extra, hex_in)
    assert decoded.exit_code == 0, decoded.output
    value = json.loads(decoded.output)
    encoded = run(
        "encode", "--api", api, "--version", str(version), direction, *extra, json.dumps(value)
    )
    assert encoded.exit_code == 0, encoded.output
    assert encoded.output.strip() == hex_in
    return value


@pytest.mark.parametrize(
    ("api", "kind", "version", "hex_bytes"),
    [(v[0], v[1], v[2], v[3]) for v in VECTORS],
    ids=[f"{v[0]}-{v[1]}-v{v[2]}" for v in VECTORS],
)
def test_golden_bodies_round_trip_byte_exact(
    api: str, kind: str, version: int, hex_bytes: str
) -> None:
    round_trip(api, version, f"--{kind}", hex_bytes)


def test_unknown_tagged_fields_survive_the_round_trip() -> None:
    # Heartbeat v4 request: group_id "g", generation 1, member "m", no instance id, then a
    # tagged section with one unknown tag 5 of two bytes.
    body = "0267" + "00000001" + "026d" + "00" + "01" + "05" + "02" + "abcd"
    value = round_trip("Heartbeat", 4, "--request", body)
    assert value["_unknown_tagged_fields"] == {"5": "abcd"}
    assert (value["group_id"], value["generation_id"], value["member_id"]) == ("g", 1, "m")


def test_whole_request_frame_with_tagged_header_round_trips() -> None:
    header = "000c" + "0004" + "00000007" + "0002" + "6331" + "01" + "03" + "01" + "ee"
    body = "0267" + "00000001" + "026d" + "00" + "00"
    frame = f"{(len(header + body) // 2):08x}" + header + body
    value = round_trip("Heartbeat", 4, "--request", frame, "--with-header")
    assert value["header"]["client_id"] == "c1"
    assert value["header"]["_unknown_tagged_fields"] == {"3": "ee"}
    assert value["body"]["member_id"] == "m"


def test_whole_response_frames_round_trip() -> None:
    # Heartbeat v4 response: header v1 (correlation id + empty tagged section).
    hb = "00000007" + "00" + "00000000" + "001b" + "00"
    value = round_trip("Heartbeat", 4, "--response", f"{len(hb) // 2:08x}" + hb, "--with-header")
    assert value == {
        "header": {"correlation_id": 7},
        "body": {"throttle_time_ms": 0, "error_code": 27},
    }
    # ApiVersions v3 response: always header v0 (no tagged section), flexible body.
    av = "0000002a" + "0000" + "02" + "0012" + "0000" + "0004" + "00" + "00000000" + "00"
    value = round_trip("ApiVersions", 3, "--response", f"{len(av) // 2:08x}" + av, "--with-header")
    assert value["header"] == {"correlation_id": 42}
    assert value["body"]["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["decode", "--api", "Heartbeat", "--version", "4", "zz"], "non-hexadecimal"),
        (["decode", "--api", "Heartbeat", "--version", "4", "026700"], "malformed"),
        (["decode", "--api", "Heartbeat", "--version", "0", "0001670000000100016d00"], "trailing"),
        (["decode", "--api", "Heartbeat", "--version", "4", "--with-header", "00"], "size"),
        (["decode", "--api", "Nope", "--version", "0", "00"], "unknown API"),
        (["decode", "--api", "Heartbeat", "--version", "9", "00"], "versions 0-4"),
        (["encode", "--api", "Heartbeat", "--version", "4", "{not json"], "Expecting"),
        (["encode", "--api", "Heartbeat", "--version", "4", '{"groupid": "g"}'], "has no"),
        (["encode", "--api", "Heartbeat", "--version", "4", '{"group_id": 5}'], "cannot encode"),
        (["encode", "--api", "Heartbeat", "--version", "4", "--with-header", "{}"], "header"),
    ],
)
def test_bad_input_is_a_clean_error(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit)  # no traceback, just the message
    assert message in result.output
    assert "Traceback" not in result.output


@pytest.mark.integration  # starts a process
def test_module_entry_point_prints_json_and_exits_non_zero_on_errors() -> None:
    ok = subprocess.run(
        [
            sys.executable,
            "-m",
            "protocol",
            "decode",
            "--api",
            "Heartbeat",
            "--version",
            "4",
            "026700000001026d0000",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert ok.returncode == 0 and json.loads(ok.stdout)["member_id"] == "m"
    bad = subprocess.run(
        [sys.executable, "-m", "protocol", "decode", "--api", "Heartbeat", "--version", "4", "02"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert bad.returncode != 0 and bad.stderr.startswith("Error:") and "Traceback" not in bad.stderr
