"""An option's declaration (:class:`Opt`) and the one registry of declared names.

faces/options.py declares every option with :func:`declare` (once per name) and groups them per command;
an Opt checks a value against its range and allowed values with a one-line error naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path


#: the default of an option that must be given (a required CLI argument, a required JSON field)
REQUIRED = ...


@dataclass(frozen=True)
class Opt:
    name: str
    kind: str  # int | float | bool | str | list_int | kv | path | rate | price (GPU=USD pairs)
    default: object
    help: str
    flags: tuple[str, ...] = ()  # CLI spellings; default --<name with dashes>
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None  # strict upper bound (acceptance < 1)
    api_le: float | None = None  # work cap of the JSON API (beyond ``le``)
    choices: tuple[str, ...] | None = None
    cli: bool = True
    api: bool = True
    argument: bool = False  # positional CLI argument
    api_kind: str | None = None  # the JSON type when it differs from the CLI's (kv: dict; list_int: list)
    extra: dict = field(default_factory=dict)
    base: Opt | None = field(default=None, compare=False, repr=False)  # the declaration an override derives from

    def but(self, **changes) -> Opt:
        """This option as one command takes it: the command's own default, bounds, help, flags or allowed
        values, stated once in its group below; ``base`` keeps the one declaration of the name."""
        if "name" in changes or "base" in changes:
            raise TypeError(f"option {self.name!r}: an override keeps the declared name")
        return replace(self, base=self.base or self, **changes)

    @property
    def declaration(self) -> Opt:
        """The one declaration of this option's name (itself, or what an override derives from)."""
        return self.base or self

    @property
    def cli_flags(self) -> tuple[str, ...]:
        return self.flags or ("--" + self.name.replace("_", "-"),)

    def check(self, value):
        """One-line ValueError naming the option when ``value`` is outside its declared range or choices."""
        if value is None:
            return value
        label = self.name
        if self.choices is not None:
            for item in value if self.kind == "list_str" else (value,):
                if item not in self.choices:
                    raise ValueError(f"{label}={item!r} unknown; allowed: {', '.join(self.choices)}")
        if self.kind in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
                raise ValueError(f"{label}={value!r} must be a number")
            if self.kind == "int" and int(value) != value:
                raise ValueError(f"{label}={value!r} must be an integer")
            for bound, ok, word in ((self.ge, lambda v, b: v >= b, ">="), (self.gt, lambda v, b: v > b, ">"),
                                    (self.le, lambda v, b: v <= b, "<="), (self.lt, lambda v, b: v < b, "<")):
                if bound is not None and not ok(value, bound):
                    kind = "an integer" if self.kind == "int" else "a number"
                    shown = f"{int(bound):,}" if float(bound).is_integer() else f"{bound:g}"
                    raise ValueError(f"{label}={value!r} must be {kind} {word} {shown}")
        return value


#: every declared option by name: one declaration per name (overrides derive from these, see Opt.but)
DECLARED: dict[str, Opt] = {}


def declare(name, kind, default, help, **kw) -> Opt:
    """Declare option ``name``, once: a second declaration of a name is an error at import."""
    if name in DECLARED:
        raise RuntimeError(f"option {name!r} is declared twice in options.py; declare it once and state a "
                           f"command's own default, bounds or help with .but()")
    o = DECLARED[name] = Opt(name, kind, default, help, **kw)
    return o


def any_given(values: dict, opts: tuple[Opt, ...]) -> bool:
    """Whether ``values`` (parsed options) set any of ``opts``."""
    return any(values.get(o.name) for o in opts)


def by_name(*groups: tuple[Opt, ...]) -> dict[str, Opt]:
    return {o.name: o for g in groups for o in g}
