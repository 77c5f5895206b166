"""No import cycle in coordinator/ (issue 39): every import counts, those inside functions and
under ``TYPE_CHECKING`` too, since each hides an order the modules must be loaded in.

The one knot allowed is the conformance suite's: its registry imports the scenario modules,
which register themselves through it.
"""

from __future__ import annotations

import grimp

ALLOWED = "coordinator.conformance.registry", "coordinator.conformance.scenarios"


def import_cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The graph's strongly connected components of more than one module (Tarjan's, without
    recursion), each sorted, each followed by nothing: a module importing itself is no cycle."""
    modules = sorted(graph.modules)
    edges = {m: sorted(graph.find_modules_directly_imported_by(m)) for m in modules}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in modules:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            module, next_edge = work.pop()
            if next_edge == 0:
                index[module] = low[module] = len(index)
                stack.append(module)
                on_stack.add(module)
            targets = edges.get(module, [])
            if next_edge < len(targets):
                work.append((module, next_edge + 1))
                target = targets[next_edge]
                if target not in index:
                    work.append((target, 0))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def allowed(component: list[str]) -> bool:
    return all(
        m == ALLOWED[0] or m == ALLOWED[1] or m.startswith(ALLOWED[1] + ".") for m in component
    )


def explain(graph: grimp.ImportGraph, component: list[str]) -> str:
    members = set(component)
    lines = [f"{len(component)} modules import each other:"]
    for importer in component:
        for imported in sorted(graph.find_modules_directly_imported_by(importer) & members):
            where = graph.get_import_details(importer=importer, imported=imported)
            line = where[0]["line_number"] if where else "?"
            lines.append(f"  {importer}:{line} -> {imported}")
    return "\n".join(lines)


def test_no_module_of_coordinator_is_part_of_an_import_cycle() -> None:
    graph = grimp.build_graph("coordinator", cache_dir=None)
    cycles = [c for c in import_cycles(graph) if not allowed(c)]
    assert not cycles, "\n".join(explain(graph, c) for c in cycles)


def test_the_conformance_registry_is_the_one_knot_left() -> None:
    """The allowance is no blanket: the registry is still a knot, and only it."""
    graph = grimp.build_graph("coordinator", cache_dir=None)
    knots = [c for c in import_cycles(graph) if allowed(c)]
    assert len(knots) == 1 and ALLOWED[0] in knots[0]


def test_a_cycle_through_a_type_only_or_function_level_import_is_found() -> None:
    graph = grimp.ImportGraph()
    graph.add_import(importer="pkg.settings", imported="pkg.observe")
    graph.add_import(importer="pkg.observe", imported="pkg.runtime")  # under TYPE_CHECKING
    graph.add_import(importer="pkg.runtime", imported="pkg.settings")  # inside a function
    graph.add_import(importer="pkg.runtime", imported="pkg.clock")
    graph.add_import(importer="pkg.clock", imported="pkg.clock")
    assert import_cycles(graph) == [["pkg.observe", "pkg.runtime", "pkg.settings"]]
