"""Reading a config while recording which keys were read, defaulted and left unread."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from posenc_ref.errors import EXACT_LIMIT, SpecError

FUNC = "resolve"

SIZE_LIMIT: Final = 2**16
"""The largest layer count, head count or head width the resolver takes. The resolver lists every
layer and the model ops build one array row per head and one column per channel, so a larger value
(no published model comes within a factor of 100 of it) is refused instead of built."""
SIZE_KEYS: Final = frozenset({
    "num_hidden_layers", "n_layer", "n_layers", "num_layers", "num_decoder_layers", "encoder_layers",
    "decoder_layers", "num_attention_heads", "num_key_value_heads", "num_global_key_value_heads", "n_head",
    "n_heads", "num_heads", "num_kv_heads", "encoder_attention_heads", "decoder_attention_heads", "head_dim",
    "global_head_dim", "d_kv", "d_head", "qk_rope_head_dim", "qk_nope_head_dim", "rotary_dim"})
"""The integer keys :data:`SIZE_LIMIT` bounds; every other integer key is bounded by 2**53 - 1."""


def load_config(config: Any) -> dict[str, Any]:
    """The config as a dict: a mapping as given, or a ``config.json`` read from a path."""
    if isinstance(config, Mapping):
        return dict(config)
    if not isinstance(config, (str, Path)):
        raise TypeError(f"{FUNC}: config must be a mapping or a path to a config.json, got {type(config).__name__}")
    path = Path(config)
    if not path.is_file():
        raise SpecError(f"{FUNC}: config={str(path)!r} is not a file", category="invalid_argument")
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SpecError(f"{FUNC}: config={str(path)!r} is not a JSON file ({exc})") from None
    if not isinstance(value, dict):
        raise SpecError(f"{FUNC}: config={str(path)!r} must hold a JSON object, got a JSON {type(value).__name__}")
    return value


def check_upper(key: str, value: int) -> None:
    """SpecError when the integer ``value`` of config key ``key`` is past its bound (:data:`SIZE_KEYS`)."""
    if key.rsplit(".", 1)[-1] in SIZE_KEYS:
        if value > SIZE_LIMIT:
            raise SpecError(f"{FUNC}: {key} must be at most 2**16 = {SIZE_LIMIT} (the resolver lists every layer "
                            f"and builds arrays over heads and channels), got {value!r}")
    elif value >= EXACT_LIMIT:
        raise SpecError(f"{FUNC}: {key} must be below 2**53 (an exact integer in float64 and int64), got {value!r}")


def positive(name: str, value: Any) -> float:
    """``value`` as a float: a finite JSON number > 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise SpecError(f"{FUNC}: {name} must be a number > 0, got {name}={value!r}")
    return float(value)


def finite(name: str, value: Any) -> float:
    """``value`` as a float: a finite JSON number (sign free; the op checks its range)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f"{FUNC}: {name} must be a finite number, got {name}={value!r}")
    return float(value)


def count(name: str, value: Any) -> int:
    """``value`` as an integer >= 1 within its bound (:func:`check_upper`)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{FUNC}: {name} must be an integer >= 1, got {value!r}")
    check_upper(name, value)
    return value


class Reader:
    """Key access on one (possibly nested) config mapping that remembers every read.

    ``prefix`` is the dotted path of the mapping in the whole config (``"text_config."``).
    """

    def __init__(self, data: Mapping[str, Any], prefix: str = "", *, parent: Reader | None = None) -> None:
        self.data, self.prefix = data, prefix
        root = parent.root if parent else self
        self.root: Reader = root
        self.aliases: Mapping[str, tuple[str, ...]] = {}
        self.alias_owner = ""
        if parent is None:
            self.read: dict[str, Any] = {}
            self.defaulted: dict[str, Any] = {}
            self.notes: list[str] = []

    def spell(self, aliases: Mapping[str, tuple[str, ...]], owner: str) -> None:
        """Read each key of ``aliases`` from any of its other spellings when the config leaves it out.

        ``owner`` names the transformers config class that maps those spellings onto one attribute
        (its ``attribute_map``, or a legacy keyword it still accepts).
        """
        self.aliases, self.alias_owner = aliases, owner

    def _spelling(self, key: str) -> str:
        """The key the config spells ``key`` with: ``key`` itself, else the one alias it gives."""
        given = [alias for alias in self.aliases.get(key, ()) if alias in self.data and self.data[alias] is not None]
        for alias in given:
            if key in self.data and self.data[key] is not None and self.data[key] != self.data[alias]:
                raise SpecError(f"{FUNC}: {self.prefix + key}={self.data[key]!r} and {self.prefix + alias}="
                                f"{self.data[alias]!r} are two spellings of one {self.alias_owner} attribute and "
                                "disagree; give one")
            if key in self.data and self.data[key] is not None:
                self.root.read[self.prefix + alias] = self.data[alias]
        if key in self.data and self.data[key] is not None or not given:
            return key
        if len({repr(self.data[alias]) for alias in given}) > 1:
            raise SpecError(f"{FUNC}: {', '.join(f'{self.prefix + a}={self.data[a]!r}' for a in given)} are spellings "
                            f"of one {self.alias_owner} attribute ({self.prefix + key}) and disagree; give one")
        for alias in given[1:]:
            self.root.read[self.prefix + alias] = self.data[alias]
        note = (f"{self.prefix + given[0]} is read as {self.prefix + key} ({self.alias_owner} maps the one onto the "
                "other)")
        if note not in self.root.notes:
            self.root.notes.append(note)
        return given[0]

    def has(self, key: str) -> bool:
        key = self._spelling(key)
        return key in self.data and self.data[key] is not None

    def get(self, key: str, default: Any = None, *, record_default: bool = True) -> Any:
        """``data[key]`` (recorded as read), else ``default`` (recorded as defaulted)."""
        key = self._spelling(key)
        if self.has(key):
            self.root.read[self.prefix + key] = self.data[key]
            return self.data[key]
        if record_default and default is not None:
            self.root.defaulted[self.prefix + key] = default
        elif key in self.data:  # present as null: read, meaning "none"
            self.root.read[self.prefix + key] = None
        return default

    def require(self, key: str) -> Any:
        if not self.has(key):
            spellings = " or ".join(self.prefix + k for k in (key, *self.aliases.get(key, ())))
            raise SpecError(f"{FUNC}: the config needs {spellings}, which is missing")
        return self.get(key)

    def integer(self, key: str, default: int | None = None, *, minimum: int = 1) -> int:
        value = self.get(key, default) if default is not None else self.require(key)
        key = self._spelling(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise SpecError(f"{FUNC}: {self.prefix + key} must be an integer >= {minimum}, got {value!r}")
        check_upper(self.prefix + key, value)
        return value

    def number(self, key: str, default: float | None = None, *, positive: bool = True) -> float:
        value = self.get(key, default) if default is not None else self.require(key)
        key = self._spelling(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise SpecError(f"{FUNC}: {self.prefix + key} must be a finite number, got {value!r}")
        if positive and not value > 0:
            raise SpecError(f"{FUNC}: {self.prefix + key} must be > 0, got {value!r}")
        return float(value)

    def child(self, key: str) -> Reader:
        value = self.data[key]
        if not isinstance(value, Mapping):
            raise SpecError(f"{FUNC}: {self.prefix + key} must be an object, got {value!r}")
        self.root.read.setdefault(self.prefix + key, "{...}")
        return Reader(value, f"{self.prefix}{key}.", parent=self)

    def note(self, text: str) -> None:
        self.root.notes.append(text)

    def ignored(self, whole: Mapping[str, Any]) -> tuple[str, ...]:
        """Keys of ``whole`` (and of nested objects that were entered) that were never read."""
        out: list[str] = []

        def walk(mapping: Mapping[str, Any], prefix: str) -> None:
            for key, value in mapping.items():
                name = prefix + key
                if name in self.read and self.read[name] == "{...}" and isinstance(value, Mapping):
                    walk(value, name + ".")
                elif name not in self.read:
                    out.append(name)
        walk(whole, "")
        return tuple(out)
