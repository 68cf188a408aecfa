"""`tf.flags` / `tf.app.flags` and `tf.app.run`: TF1's command-line flags (absl's names).

`FLAGS` parses `sys.argv` the first time a flag is read (TF1's wrapper did the same), or
when `app.run()` starts `main`: `--name=value`, `--name value`, `--flag` / `--noflag` for
booleans; `--help` prints the flags. An unknown flag is an error, as absl's.

>>> from dualgrad.graph import flags
>>> fl = flags.FlagValues()
>>> _ = fl.DEFINE_integer("batch_size", 32, "examples per step")
>>> _ = fl.DEFINE_boolean("fake", False, "use fake data")
>>> rest = fl(["prog", "--batch_size=8", "--fake", "data.txt"])
>>> fl.batch_size, fl.fake, rest
(8, True, ['prog', 'data.txt'])
"""
from __future__ import annotations

import sys

__all__ = ["FLAGS", "FlagValues", "DEFINE_string", "DEFINE_integer", "DEFINE_float",
           "DEFINE_boolean", "DEFINE_bool", "DEFINE_list", "DEFINE_enum", "DEFINE_multi_string",
           "mark_flag_as_required", "mark_flags_as_required", "Error", "IllegalFlagValueError",
           "UnrecognizedFlagError", "run"]


class Error(Exception):
    """A flag error (absl's flags.Error)."""


class IllegalFlagValueError(Error):
    pass


class UnrecognizedFlagError(Error):
    pass


def _bool(text):
    low = str(text).lower()
    if low in ("true", "t", "1", "yes", "y"):
        return True
    if low in ("false", "f", "0", "no", "n"):
        return False
    raise ValueError(f"{text!r} is not a boolean")


class _Flag:
    def __init__(self, name, default, help_text, parse, kind):
        self.name, self.default, self.help, self.parse, self.kind = \
            name, default, help_text, parse, kind
        self.value, self.required = default, False

    def set(self, text):
        try:
            self.value = self.parse(text)
        except (ValueError, TypeError) as e:
            raise IllegalFlagValueError(f"flag --{self.name}={text}: {e}") from None


class FlagValues:
    """Flags by name: `FLAGS.name` reads one (parsing sys.argv first if not parsed yet),
    `FLAGS(argv)` parses and returns the arguments that are not flags."""

    def __init__(self):
        object.__setattr__(self, "_flags", {})
        object.__setattr__(self, "_parsed", False)

    # -- definitions
    def _define(self, name, default, help_text, parse, kind):
        if name in self._flags:
            raise Error(f"The flag '{name}' is defined twice.")
        flag = _Flag(name, default, help_text, parse, kind)
        if default is not None and kind != "string":
            flag.value = parse(default) if isinstance(default, str) else default
        self._flags[name] = flag
        return flag

    def DEFINE_string(self, name, default, help=None, **kw):  # noqa: A002 - absl's name
        return self._define(name, default, help, str, "string")

    def DEFINE_integer(self, name, default, help=None, lower_bound=None, upper_bound=None,
                       **kw):  # noqa: A002
        def parse(text):
            v = int(text)
            if (lower_bound is not None and v < lower_bound) or \
                    (upper_bound is not None and v > upper_bound):
                raise ValueError(f"{v} is outside [{lower_bound}, {upper_bound}]")
            return v
        return self._define(name, default, help, parse, "integer")

    def DEFINE_float(self, name, default, help=None, **kw):  # noqa: A002
        return self._define(name, default, help, float, "float")

    def DEFINE_boolean(self, name, default, help=None, **kw):  # noqa: A002
        return self._define(name, default, help, _bool, "boolean")

    DEFINE_bool = DEFINE_boolean

    def DEFINE_list(self, name, default, help=None, **kw):  # noqa: A002
        return self._define(name, default, help,
                            lambda t: [s for s in t.split(",") if s] if isinstance(t, str)
                            else list(t), "list")

    def DEFINE_multi_string(self, name, default, help=None, **kw):  # noqa: A002
        return self._define(name, default, help,
                            lambda t: [t] if isinstance(t, str) else list(t), "list")

    def DEFINE_enum(self, name, default, enum_values, help=None, **kw):  # noqa: A002
        def parse(text):
            if text not in enum_values:
                raise ValueError(f"value should be one of <{'|'.join(enum_values)}>")
            return text
        return self._define(name, default, help, parse, "string")

    def mark_flag_as_required(self, name):
        self._flags[name].required = True

    # -- parsing
    def __call__(self, argv, known_only=False):
        rest, args = [argv[0]] if argv else [], list(argv[1:])
        while args:
            arg = args.pop(0)
            if arg == "--":
                rest += args
                break
            if not arg.startswith("-") or arg == "-":
                rest.append(arg)
                continue
            if not self._parse_one(arg, args) and not known_only:
                raise UnrecognizedFlagError(f"Unknown command line flag '{arg.lstrip('-')}'")
            elif not self._known(arg):
                rest.append(arg)
        object.__setattr__(self, "_parsed", True)
        for f in self._flags.values():
            if f.required and f.value is None:
                raise IllegalFlagValueError(f"flag --{f.name}=None: Flag --{f.name} must have "
                                            "a value other than None.")
        return rest

    def _known(self, arg):
        name = arg.lstrip("-").split("=", 1)[0]
        return name in self._flags or (name.startswith("no") and name[2:] in self._flags)

    def _parse_one(self, arg, args):
        name, eq, value = arg.lstrip("-").partition("=")
        if name in ("help", "helpfull", "h") and not eq:
            print(self._usage())
            sys.exit(0)
        flag = self._flags.get(name)
        if flag is None and name.startswith("no") and not eq and name[2:] in self._flags \
                and self._flags[name[2:]].kind == "boolean":
            self._flags[name[2:]].value = False
            return True
        if flag is None:
            return False
        if not eq:
            if flag.kind == "boolean":
                flag.value = True
                return True
            if not args:
                raise Error(f"Flag --{name} needs a value")
            value = args.pop(0)
        flag.set(value)
        return True

    def _usage(self):
        return "\n".join(f"  --{f.name}: {f.help or ''}\n    (default: '{f.default}')"
                         for f in self._flags.values())

    def is_parsed(self):
        return self._parsed

    def mark_as_parsed(self):
        object.__setattr__(self, "_parsed", True)

    def flag_values_dict(self):
        return {n: f.value for n, f in self._flags.items()}

    def __contains__(self, name):
        return name in self._flags

    def __getitem__(self, name):
        return self._flags[name]

    def __getattr__(self, name):
        flags = object.__getattribute__(self, "_flags")
        if name not in flags:
            raise AttributeError(name)
        if not self._parsed:
            self(sys.argv, known_only=True)
        return flags[name].value

    def __setattr__(self, name, value):
        if name not in self._flags:
            raise AttributeError(f"no flag named {name!r} (define it with DEFINE_*)")
        self._flags[name].value = value

    def __dir__(self):
        return list(self._flags)


FLAGS = FlagValues()
DEFINE_string, DEFINE_integer, DEFINE_float = \
    FLAGS.DEFINE_string, FLAGS.DEFINE_integer, FLAGS.DEFINE_float
DEFINE_boolean = DEFINE_bool = FLAGS.DEFINE_boolean
DEFINE_list, DEFINE_enum, DEFINE_multi_string = \
    FLAGS.DEFINE_list, FLAGS.DEFINE_enum, FLAGS.DEFINE_multi_string
mark_flag_as_required = FLAGS.mark_flag_as_required


def mark_flags_as_required(names):
    for n in names:
        mark_flag_as_required(n)


def run(main=None, argv=None):
    """tf.app.run: parse the flags from argv (default sys.argv), then
    `sys.exit(main(remaining_argv))`; `main` defaults to the `__main__` module's `main`."""
    if main is None:
        main = sys.modules["__main__"].main
    try:
        rest = FLAGS(sys.argv if argv is None else argv, known_only=True)
    except Error as e:
        print(f"FATAL Flags parsing error: {e}", file=sys.stderr)
        sys.exit(1)
    sys.exit(main(rest))
