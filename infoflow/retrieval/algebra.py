"""Expression algebra for the canonical form: additive terms with their signs, which nested
reductions flatten into their parent, and connected groups of indices."""

from __future__ import annotations

from infoflow.retrieval.expression import Apply, Const, Node, Reduce

EXTREMUM = {"max": 1, "argmax": 1, "min": -1, "argmin": -1}


def additive(node: Node, sign: int = 1) -> list[tuple[int, Node]]:
    """The additive terms of an expression with their signs: a - 2 * b -> [(1, a), (-1, b)]
    (a constant factor only scales a term; a zero constant drops it)."""
    if isinstance(node, Apply):
        if node.fn == "+":
            return additive(node.args[0], sign) + additive(node.args[1], sign)
        if node.fn == "-":
            return additive(node.args[0], sign) + additive(node.args[1], -sign)
        if node.fn == "neg":
            return additive(node.args[0], -sign)
        if node.fn in ("*", "/") and isinstance(node.args[1], Const):
            return _scaled(node.args[0], node.args[1].value, sign)
        if node.fn == "*" and isinstance(node.args[0], Const):
            return _scaled(node.args[1], node.args[0].value, sign)
    return [(sign, node)]


def _scaled(node: Node, factor: float, sign: int) -> list[tuple[int, Node]]:
    if factor == 0:
        return []
    return additive(node, sign if factor > 0 else -sign)


def signed(node: Node, sign: int) -> Node:
    return node if sign > 0 else Apply("neg", (node,))


def flattens(op: str, sign: int, term: Node) -> bool:
    """Whether ``term`` (with ``sign``) is a reduction that merges into an ``op`` reduction."""
    if not isinstance(term, Reduce):
        return False
    if op == "sum":
        return term.op == "sum"
    if op in EXTREMUM and term.op in ("max", "min"):
        return sign * EXTREMUM[term.op] == EXTREMUM[op]
    return False


class UnionFind:
    """Connected groups of names, in the order the names were given."""

    def __init__(self, names):
        self.parent = {name: name for name in names}

    def find(self, name: str) -> str:
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def join(self, names) -> None:
        names = sorted(names)
        for name in names[1:]:
            self.parent[self.find(name)] = self.find(names[0])

    def roots(self) -> list[str]:
        order = list(self.parent)
        return sorted({self.find(n) for n in self.parent}, key=order.index)

    def members(self, root: str) -> set[str]:
        return {n for n in self.parent if self.find(n) == root}
