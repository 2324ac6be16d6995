"""Where a symbol (`Clock.now`, `Handler.ServeHTTP`, `parseArgs`) is in a file: its first and last
line. Python through the standard library's `ast`; Go, JavaScript and TypeScript through tree-sitter
grammars (compiled, shipped in their wheels). Other languages have no symbols: cite lines instead."""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Callable, Iterator
from functools import cache, lru_cache

from tree_sitter import Language, Node, Parser

Span = tuple[int, int]  # 1-based, inclusive

_TS_SUFFIXES = {".go": "go", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript"}
_TS_SUFFIXES |= {".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx"}


def language_of(path: str) -> str | None:
    if path.endswith((".py", ".pyi")):
        return "python"
    dot = path.rfind(".")
    return _TS_SUFFIXES.get(path[dot:]) if dot >= 0 else None


def supports(path: str) -> bool:
    return language_of(path) is not None


def find(path: str, source: bytes, symbol: str) -> Span | None:
    """The lines of `symbol` in `source` (the file at `path`); None when absent or unparseable."""
    lang = language_of(path)
    if lang is None:
        return None
    key = (lang, hashlib.blake2b(source, digest_size=16).digest(), symbol)
    if key not in _spans:
        if len(_spans) >= _SPANS_MAX:
            _spans.clear()
        parts = symbol.split(".")
        tree = _py_tree(source) if lang == "python" else None
        _spans[key] = _python(tree, parts) if lang == "python" else _tree_sitter(_ts_tree(lang, source), lang, parts)
    return _spans[key]


# A check of many anchors in one file asks for many symbols in the same bytes: each file version is
# parsed once (a large module takes ~15 ms to parse; the last 16 trees are kept) and each answer is
# kept under a digest of the bytes (small entries, never stale: the same bytes, the same answer).
_SPANS_MAX = 20_000
_spans: dict[tuple[str, bytes, str], Span | None] = {}


@lru_cache(maxsize=16)
def _py_tree(source: bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


@lru_cache(maxsize=16)
def _ts_tree(lang: str, source: bytes) -> Node:
    return _parser(lang).parse(source).root_node


# --- Python -------------------------------------------------------------------------------


def _py_named(body: list[ast.stmt]) -> Iterator[tuple[str, ast.stmt]]:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    yield t.id, node


def _python(tree: ast.Module | None, parts: list[str]) -> Span | None:
    if tree is None:
        return None
    body: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    for part in parts:
        found = next((n for name, n in _py_named(body) if name == part), None)
        if found is None:
            return None
        body = found.body if isinstance(found, ast.ClassDef) else []
    assert found is not None
    decorators = getattr(found, "decorator_list", [])
    start = min([found.lineno, *(d.lineno for d in decorators)])
    return start, found.end_lineno or found.lineno


# --- tree-sitter (Go, JavaScript, TypeScript) ------------------------------------------------


@cache
def _parser(lang: str) -> Parser:
    if lang == "go":
        import tree_sitter_go as grammar

        return Parser(Language(grammar.language()))
    if lang == "javascript":
        import tree_sitter_javascript as js

        return Parser(Language(js.language()))
    import tree_sitter_typescript as ts

    return Parser(Language(ts.language_tsx() if lang == "tsx" else ts.language_typescript()))


def _name(node: Node) -> str:
    name = node.child_by_field_name("name")
    return name.text.decode(errors="replace") if name is not None and name.text is not None else ""


def _go_receiver(node: Node) -> str:
    """`func (c *Clock) Now()` → "Clock"."""
    receiver = node.child_by_field_name("receiver")
    text = receiver.text.decode(errors="replace") if receiver is not None and receiver.text is not None else ""
    words = text.strip("()").replace("*", " ").split()
    return words[-1].split("[")[0] if words else ""


_JS_DEFS = {
    "function_declaration",
    "generator_function_declaration",
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "type_alias_declaration",
    "enum_declaration",
    "method_definition",
    "public_field_definition",
    "field_definition",
    "method_signature",
    "abstract_method_signature",
    "internal_module",
    "module",
}


def _js_named(node: Node) -> Iterator[tuple[str, Node]]:
    """Named definitions directly inside `node` (a program, class or interface body, namespace)."""
    for child in node.named_children:
        if child.type == "export_statement":
            decl = child.child_by_field_name("declaration")
            if decl is not None:
                for name, _ in _js_named_one(decl):
                    yield name, child  # the export keyword belongs to the cited text
                continue
        yield from _js_named_one(child)


def _js_named_one(node: Node) -> Iterator[tuple[str, Node]]:
    if node.type in _JS_DEFS:
        prop = node.child_by_field_name("property")
        yield (_name(node) or (prop.text.decode() if prop is not None and prop.text else "")), node
    elif node.type in ("lexical_declaration", "variable_declaration"):
        for decl in node.named_children:
            if decl.type == "variable_declarator":
                yield _name(decl), node
    elif node.type == "expression_statement" and node.named_children:
        inner = node.named_children[0]
        if inner.type in ("internal_module", "module"):
            yield _name(inner), inner


def _js_body(node: Node) -> Node | None:
    if node.type == "export_statement":
        decl = node.child_by_field_name("declaration")
        return _js_body(decl) if decl is not None else None
    return node.child_by_field_name("body")


def _go_named(root: Node) -> Iterator[tuple[str, Node]]:
    for child in root.named_children:
        if child.type == "function_declaration":
            yield _name(child), child
        elif child.type == "method_declaration":
            yield f"{_go_receiver(child)}.{_name(child)}", child
        elif child.type in ("type_declaration", "const_declaration", "var_declaration"):
            for spec in child.named_children:
                if spec.type in ("type_spec", "type_alias", "const_spec", "var_spec"):
                    yield _name(spec), child if len(child.named_children) == 1 else spec


def _tree_sitter(root: Node, lang: str, parts: list[str]) -> Span | None:
    if lang == "go":
        wanted = ".".join(parts)
        node = next((n for name, n in _go_named(root) if name == wanted), None)
        return _span(node)
    named: Callable[[Node], Iterator[tuple[str, Node]]] = _js_named
    container: Node | None = root
    found: Node | None = None
    for part in parts:
        if container is None:
            return None
        found = next((n for name, n in named(container) if name == part), None)
        if found is None:
            return None
        container = _js_body(found)
    return _span(found)


def _span(node: Node | None) -> Span | None:
    if node is None:
        return None
    return node.start_point[0] + 1, node.end_point[0] + 1
