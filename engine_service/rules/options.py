"""Table options: typed, validated values with the rulebooks' defaults.

Each game declares its options (the "Table options" section of its rulebook) as
:class:`OptionSpec` values. :func:`validate_options` turns a mapping from a transcript, an API
request or a test into a complete, immutable :class:`Options` with every default filled in. An
unknown option or a value outside the allowed set is an :class:`InvalidOptions` error naming the
option and the allowed values; nothing is ever silently ignored (ARCHITECTURE.md section 3).

Values use their JSON types as in the rulebooks and NOTATION.md section 3: ``enum`` options
take strings (``"khishti_penalty": "500"``), ``bool`` options JSON booleans, ``int`` options
JSON integers (``"kl_target_score": 500``). For ``int`` options with a fixed set of values
(``kl_first_deal_packet``: ``3 | 2``) ``values`` lists them; open ranges use ``minimum`` /
``maximum``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, TypeVar

from .errors import InvalidOptions

ENUM = "enum"
BOOL = "bool"
INT = "int"

#: The largest magnitude a new match's ``int`` option may take where its spec sets no bound
#: (:meth:`OptionSpec.check_new`): 2^53 - 1, the largest integer every JSON reader holds exactly
#: (a double). Option values travel as JSON numbers (transcripts, NOTATION.md section 3) and as
#: doubles in ``View.table`` (a protobuf Struct), and docs/api.md tells clients that the API's
#: 64-bit integers fit a JavaScript number: an open range such as ``kl_target_score`` ("any
#: positive integer") took any int64, so 2^53 + 1 came back as 2^53 in every view's
#: ``table.options``, and a lobby in JavaScript showed 2^63 - 1 as 9223372036854775808.
JSON_SAFE_INT = 2**53 - 1


@dataclass(frozen=True)
class OptionSpec:
    """One table option: name, type, allowed values (default first), help and rule ids."""

    name: str
    kind: str  # ENUM | BOOL | INT
    default: Any
    values: tuple[Any, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    help: str = ""
    rules: tuple[str, ...] = ()

    def allowed_text(self) -> str:
        if self.kind == BOOL:
            return "true, false"
        if self.values:
            return ", ".join(_json(v) for v in self.values)
        # every game's open range has a minimum; a spec without one read "an integer >=  (at
        # most ...)" or "an integer in [, 10]"
        if self.maximum is None:
            if self.minimum is None:
                return f"an integer from -{JSON_SAFE_INT} to {JSON_SAFE_INT}"
            return f"an integer >= {self.minimum} (at most {JSON_SAFE_INT})"
        if self.minimum is None:
            return f"an integer <= {self.maximum}"
        return f"an integer in [{self.minimum}, {self.maximum}]"

    def check(self, value: Any) -> Any:
        """Return the validated value or raise :class:`InvalidOptions`."""
        ok = False
        if self.kind == BOOL:
            ok = isinstance(value, bool)
        elif self.kind == ENUM:
            ok = isinstance(value, str) and value in self.values
        elif self.kind == INT:
            ok = isinstance(value, int) and not isinstance(value, bool)
            if ok and self.values:
                ok = value in self.values
            if ok and self.minimum is not None:
                ok = value >= self.minimum
            if ok and self.maximum is not None:
                ok = value <= self.maximum
        if not ok:
            self.refuse(value)
        return value

    def refuse(self, value: Any) -> None:
        raise InvalidOptions(
            f"option {self.name!r}: invalid value {_json(value)}; allowed: {self.allowed_text()}",
            option=self.name,
            allowed=self.allowed_text(),
        )

    def check_new(self, value: Any) -> Any:
        """:meth:`check`, and for a new match (CreateMatch) an int within ``JSON_SAFE_INT``
        where the spec sets no bound. Stored matches and transcripts are read with
        :meth:`check` alone: a match created before the bound keeps its value."""
        value = self.check(value)
        if self.kind == INT and not -JSON_SAFE_INT <= value <= JSON_SAFE_INT:
            self.refuse(value)
        return value


def _json(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


@dataclass(frozen=True)
class Options(Mapping[str, Any]):
    """A complete, immutable set of table options (defaults filled in)."""

    _values: Mapping[str, Any] = field(default_factory=dict)
    _defaults: Mapping[str, Any] = field(default_factory=dict, repr=False)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def non_default(self) -> dict[str, Any]:
        """The options that differ from the defaults (what a transcript records)."""
        return {k: v for k, v in self._values.items() if self._defaults.get(k) != v}


#: How many option sets (and compiled forms of them) are kept for sharing; past it the caches
#: start again (a server sees a handful of distinct sets: the defaults and its tables' house rules).
_SHARED_LIMIT = 256

#: (id of the specs, the values in spec order) -> (the specs, their Options). The specs are kept
#: so that their id cannot be reused while the entry lives.
_INTERNED: dict[tuple[int, tuple[Any, ...]], tuple[Any, Options]] = {}


def check_new_options(specs: tuple[OptionSpec, ...], raw: Mapping[str, Any] | None) -> None:
    """The options a new match asks for, beyond :func:`validate_options`: each given value
    passes :meth:`OptionSpec.check_new` (JSON-safe integers)."""
    by_name = {s.name: s for s in specs}
    for name, value in (raw or {}).items():
        if name in by_name:
            by_name[name].check_new(value)


def validate_options(specs: tuple[OptionSpec, ...], raw: Mapping[str, Any] | None) -> Options:
    """Validate ``raw`` against ``specs``; fill defaults; raise on anything unknown or invalid.

    Equal option sets of the same specs come back as one shared :class:`Options` (it is
    immutable): every open match holds its options for its whole life, and a full garbage
    collection visits each object an open match keeps (docs/operations.md, "Memory and garbage
    collection"), so thousands of matches at the default options share one set instead of
    keeping five objects each.
    """
    raw = dict(raw or {})
    by_name = {s.name: s for s in specs}
    unknown = sorted(k for k in raw if k not in by_name)
    if unknown:
        raise InvalidOptions(
            f"unknown option {unknown[0]!r}; known options: {', '.join(sorted(by_name))}",
            option=unknown[0],
        )
    values = {s.name: s.check(raw[s.name]) if s.name in raw else s.default for s in specs}
    # a spec fixes its value's type (a bool option takes only bools, an int option no bool),
    # so equal tuples here are equal option sets: no True == 1 confusion
    key = (id(specs), tuple(values.values()))
    hit = _INTERNED.get(key)
    if hit is not None and hit[0] is specs:
        return hit[1]
    defaults = {s.name: s.default for s in specs}
    options = Options(MappingProxyType(values), MappingProxyType(defaults))
    if len(_INTERNED) >= _SHARED_LIMIT:
        _INTERNED.clear()
    _INTERNED[key] = (specs, options)
    return options


T = TypeVar("T")

#: (id of the options, the factory) -> (the options, what the factory made of them)
_COMPILED: dict[tuple[int, Any], tuple[Options, Any]] = {}


def compiled(options: Options, factory: Callable[[Options], T]) -> T:
    """``factory(options)`` made once per option set and shared: a game's hot-path form of its
    options (plain attributes instead of mapping lookups), which the states of every match at
    those options and all their clones read and never change."""
    key = (id(options), factory)
    hit = _COMPILED.get(key)
    if hit is not None and hit[0] is options:
        return hit[1]
    made = factory(options)
    if len(_COMPILED) >= _SHARED_LIMIT:
        _COMPILED.clear()
    _COMPILED[key] = (options, made)
    return made
