"""A port of apimachinery's ``labels.Parse`` (lexer and parser), so that label selectors are accepted,
refused and explained exactly as kube-apiserver does (``a in ()`` is ``a in ("")``, ``a==`` selects an
empty value, and the error texts are upstream's)."""

from __future__ import annotations

from kubetrain.kube.names import LABEL_VALUE_MSG, is_label_value, qualified_name_errors

from .errors import FieldError

SPECIAL = set("=!(),><")
TOKENS = {")": "CPAR", ",": "COMMA", "!": "NOT", "==": "DEQ", "=": "EQ", ">": "GT", "in": "IN", "<": "LT"}
TOKENS.update({"!=": "NEQ", "notin": "NOTIN", "(": "OPAR"})
BINARY = "in, notin, =, ==, !=, gt, lt"
OPERATORS = {"IN": "in", "EQ": "=", "DEQ": "=", "GT": "gt", "LT": "lt", "NOTIN": "notin", "NEQ": "!="}


class ParseError(ValueError):
    pass


def _lex(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in " \t\r\n":
            i += 1
        if i >= n:
            out.append(("END", ""))
            return out
        if text[i] in SPECIAL:
            buffer, last = "", None
            while i < n and text[i] in SPECIAL:
                buffer += text[i]
                if buffer in TOKENS:
                    last = (TOKENS[buffer], buffer)
                elif last is not None:
                    break
                i += 1
            if last is None:
                out.append(("ERROR", f"error expected: keyword found '{buffer}'"))
            else:
                out.append(last)
            continue
        start = i
        while i < n and text[i] not in SPECIAL and text[i] not in " \t\r\n":
            i += 1
        word = text[start:i]
        out.append((TOKENS[word], word) if word in ("in", "notin") else ("ID", word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def look(self, values: bool = True) -> tuple[str, str]:
        tok, lit = self.items[min(self.pos, len(self.items) - 1)]
        if values and tok in ("IN", "NOTIN"):
            tok = "ID"
        return tok, lit

    def take(self, values: bool = True) -> tuple[str, str]:
        item = self.look(values)
        self.pos = min(self.pos + 1, len(self.items) - 1)
        return item

    def parse(self) -> list[tuple[str, str, tuple[str, ...]]]:
        reqs: list[tuple[str, str, tuple[str, ...]]] = []
        while True:
            tok, lit = self.look()
            if tok in ("ID", "NOT"):
                try:
                    reqs.append(self.requirement())
                except ParseError as exc:
                    raise ParseError(f"unable to parse requirement: {exc}") from None
                tok, lit = self.take()
                if tok == "END":
                    return reqs
                if tok == "COMMA":
                    tok2, lit2 = self.look()
                    if tok2 not in ("ID", "NOT"):
                        raise ParseError(f"found '{lit2}', expected: identifier after ','")
                    continue
                raise ParseError(f"found '{lit}', expected: ',' or 'end of string'")
            if tok == "END":
                return reqs
            raise ParseError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> tuple[str, str, tuple[str, ...]]:
        op = ""
        tok, lit = self.take()
        if tok == "NOT":
            op = "!"
            tok, lit = self.take()
        if tok != "ID":
            raise ParseError(f"found '{lit}', expected: identifier")
        key = lit
        errs = qualified_name_errors(key, "a valid label key")
        if errs:
            raise ParseError(str(FieldError("FieldValueInvalid", "<nil>", key, "; ".join(errs))))
        if op or self.look()[0] in ("END", "COMMA"):
            return (key, op or "exists", ())  # parse() refuses what follows a `!key`
        tok, lit = self.take(values=False)
        if tok not in OPERATORS:
            raise ParseError(f"found '{lit}', expected: {BINARY}")
        op = OPERATORS[tok]
        values = self.set_values() if op in ("in", "notin") else self.exact_value()
        ordered = tuple(sorted(values))
        for i, value in enumerate(ordered):
            if len(value) > 63 or not is_label_value(value):
                detail = "must be no more than 63 bytes" if len(value) > 63 else LABEL_VALUE_MSG
                raise ParseError(str(FieldError("FieldValueInvalid", f"values[{i}][{key}]", value, detail)))
        if op in ("gt", "lt") and not all(v.lstrip("-").isdigit() for v in ordered):
            raise ParseError(f"for 'Gt', 'Lt' operators, the value must be an integer: {ordered}")
        return (key, op, ordered)

    def set_values(self) -> set[str]:
        tok, lit = self.take()
        if tok != "OPAR":
            raise ParseError(f"found '{lit}' expected: '('")
        tok, lit = self.look()
        if tok == "CPAR":
            self.take()
            return {""}
        if tok not in ("ID", "COMMA"):
            raise ParseError(f"found '{lit}', expected: ',', ')' or identifier")
        found = self.identifiers()
        if self.take()[0] != "CPAR":
            raise ParseError(f"found '{lit}', expected: ')'")
        return found

    def identifiers(self) -> set[str]:
        found: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == "ID":
                found.add(lit)
                tok2, lit2 = self.look()
                if tok2 == "COMMA":
                    continue
                if tok2 == "CPAR":
                    return found
                raise ParseError(f"found '{lit2}', expected: ',' or ')'")
            if tok == "COMMA":
                if not found:
                    found.add("")
                tok2, _ = self.look()
                if tok2 == "CPAR":
                    found.add("")
                    return found
                if tok2 == "COMMA":
                    self.take()
                    found.add("")
                continue
            raise ParseError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        tok, _ = self.look()
        if tok in ("END", "COMMA"):
            return {""}
        tok, lit = self.take()
        if tok == "ID":
            return {lit}
        raise ParseError(f"found '{lit}', expected: identifier")


def parse(text: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(key, operator, values) per requirement; operators: = != in notin exists ! gt lt."""
    return _Parser(text).parse()
