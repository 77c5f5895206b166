"""Reports: a summary table for people, JSON and JUnit XML for machines."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from typing import Any

from .runner import FAIL, SKIP, Result


def counts(results: list[Result]) -> Counter[str]:
    return Counter(r.outcome for r in results)


def table(results: list[Result]) -> str:
    lines = []
    by_area: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        by_area[r.scenario.area].append(r)
    width = max((len(r.scenario.name) for r in results), default=10)
    for area, rows in by_area.items():
        lines.append(f"\n{area}")
        for r in rows:
            mark = {"pass": "PASS", "fail": "FAIL", "skip": "SKIP"}[r.outcome]
            lines.append(f"  {mark}  {r.scenario.name:<{width}}  {r.seconds:6.2f}s")
            if r.outcome == SKIP:
                lines.append(f"        skipped: {r.message}")
            if r.outcome == FAIL:
                lines.append(f"        {r.message}")
                for label, text in (
                    ("request", r.request),
                    ("expected", r.expected),
                    ("actual", r.actual),
                ):
                    if text:
                        lines.append(f"        {label}: {text}")
    c = counts(results)
    total = sum(r.seconds for r in results)
    lines.append(
        f"\n{len(results)} scenarios: {c['pass']} passed, {c['fail']} failed, "
        f"{c['skip']} skipped (scenario time {total:.1f}s)"
    )
    areas: dict[str, Counter[str]] = defaultdict(Counter)
    for r in results:
        areas[r.scenario.area][r.outcome] += 1
    lines.append(f"\n{'area':<40} pass fail skip")
    for area, ac in areas.items():
        lines.append(f"{area:<40} {ac['pass']:>4} {ac['fail']:>4} {ac['skip']:>4}")
    return "\n".join(lines)


def as_dict(result: Result) -> dict[str, Any]:
    return {
        "name": result.scenario.name,
        "area": result.scenario.area,
        "outcome": result.outcome,
        "seconds": round(result.seconds, 3),
        "message": result.message,
        "request": result.request,
        "expected": result.expected,
        "actual": result.actual,
        "faults": list(result.scenario.faults),
    }


def to_json(results: list[Result], target: str, elapsed_s: float) -> str:
    c = counts(results)
    doc = {
        "target": target,
        "elapsed_seconds": round(elapsed_s, 2),
        "summary": {"pass": c["pass"], "fail": c["fail"], "skip": c["skip"]},
        "scenarios": [as_dict(r) for r in results],
    }
    return json.dumps(doc, indent=2)


def to_junit(results: list[Result], elapsed_s: float) -> str:
    c = counts(results)
    suite = ET.Element(
        "testsuite",
        name="kafka-group-conformance",
        tests=str(len(results)),
        failures=str(c[FAIL]),
        skipped=str(c[SKIP]),
        time=f"{elapsed_s:.3f}",
    )
    for r in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=r.scenario.area,
            name=r.scenario.name,
            time=f"{r.seconds:.3f}",
        )
        if r.outcome == FAIL:
            failure = ET.SubElement(case, "failure", message=r.message)
            failure.text = f"request: {r.request}\nexpected: {r.expected}\nactual: {r.actual}"
        elif r.outcome == SKIP:
            ET.SubElement(case, "skipped", message=r.message)
    return ET.tostring(suite, encoding="unicode")
