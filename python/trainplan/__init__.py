"""trainplan from Python: plan LLM training on GPU clusters before a GPU-hour is spent.

Every function returns plain dicts and lists equal to the command line's ``--json`` output for the same
arguments: the same C++ result structs, serialized by the same code. Units are in the key names
(``iteration_s`` seconds, ``peak_reserved_bytes`` bytes, ``tflops_per_gpu`` 10^12 FLOP/s, ``mfu`` a
fraction); GiB means 2^30 bytes. Keyword arguments are the CLI's flags in snake_case
(``--tensor-model-parallel-size`` or ``--tp``: ``tensor_model_parallel_size=`` or ``tp=``).

    >>> import trainplan
    >>> job = trainplan.Job(model="llama3-70b", cluster="dgx-h100", num_gpus=64, tp=8, pp=2,
    ...                     sequence_parallel=True, use_distributed_optimizer=True, gbs=512)
    >>> job.memory()["memory"]["fits"]
    True

Bad input raises :class:`trainplan.Error` (a ``ValueError``) naming the argument and the rule it breaks.
"""
from __future__ import annotations

# The module's names are its API (__all__): what it imports is kept under private names, and the typing
# names exist for type checkers only (annotations are strings here, PEP 563).
import json as _json
import os as _os
import re as _re
import shlex as _shlex
import typing as _typing

if _typing.TYPE_CHECKING:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _trainplan as _core

__all__ = ["Error", "Job", "search", "shapes", "plan", "validate", "models", "gpus", "clusters", "flags",
           "flag_classes", "schema_version", "__version__"]

__version__: str = _core.version()
#: The JSON schema version every result carries as ``schema_version``.
schema_version: int = _core.schema_version


class Error(ValueError):
    """Bad input: the message names the argument and the rule it breaks (the CLI's exit status 2).

    ``argument`` is the keyword argument the message is about, when it names one.
    """

    def __init__(self, message: str, argument: Optional[str] = None) -> None:
        super().__init__(message)
        self.argument = argument


# ---- the flag tables, from the C++ core (include/trainplan/cli/cli.h: command_flags) ------------------------

# Command-line outputs with no meaning for a function that returns dicts.
_CLI_ONLY = {"explain", "csv"}
_FLAG_TOKEN = _re.compile(r"--[a-z0-9][a-z0-9-]*")


class _Flag:
    __slots__ = ("name", "spellings", "kind", "value_name", "default", "help")

    def __init__(self, row: Mapping[str, Any]) -> None:
        self.name: str = row["name"]
        self.spellings: List[str] = [row["name"], *row["aliases"]]
        self.kind: str = row["kind"]
        self.value_name: str = row["value_name"]
        self.default: str = row["default"]
        self.help: str = row["help"]


_tables: Dict[str, Dict[str, _Flag]] = {}


def _keyword(spelling: str) -> str:
    return spelling[2:].replace("-", "_")


def _table(command: str) -> Dict[str, _Flag]:
    """Keyword → flag for ``command`` ("job", "search", "shapes", "plan"), every spelling of each flag."""
    table = _tables.get(command)
    if table is None:
        try:
            rows = _core.flags(command)
        except _core.InputError as e:
            raise Error(str(e), "command") from None
        table = {}
        for row in rows:
            flag = _Flag(row)
            for spelling in flag.spellings:
                if _keyword(spelling) not in _CLI_ONLY:
                    table.setdefault(_keyword(spelling), flag)
        _tables[command] = table
    return table


def flags(command: str = "job") -> List[Dict[str, Any]]:
    """The keyword arguments of ``command`` ("job": :class:`Job`; "search", "shapes", "plan"), one dict
    per flag: keywords (its spellings), kind (switch, integer, number, text, list, range, triple, number_or_text),
    value_name (its unit, e.g. GIB or GB/S), default and help."""
    seen: Dict[int, Dict[str, Any]] = {}
    for keyword, flag in _table(command).items():
        row = seen.setdefault(id(flag), {"keywords": [], "kind": flag.kind, "value_name": flag.value_name,
                                         "default": flag.default, "help": flag.help})
        row["keywords"].append(keyword)
    return list(seen.values())


# ---- keyword arguments → command-line arguments ---------------------------------------------------------

_WHAT = {
    "switch": "True or False",
    "integer": "an int",
    "number": "a number",
    "text": "a str",
    "list": "an int, a str or a list of them",
    "range": "a (min, max) pair or a 'MIN-MAX' str",
    "triple": "three numbers",
    "number_or_text": "a number or a str",
}


def _type_error(key: str, flag: _Flag, value: Any) -> Error:
    return Error(f"{key} takes {_WHAT[flag.kind]}, got {type(value).__name__} {value!r}", key)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number_text(value: Union[int, float]) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return str(int(value))
    return repr(value)


def _list_item(key: str, flag: _Flag, item: Any) -> str:
    if isinstance(item, bool):
        return "on" if item else "off"
    if _is_number(item):
        return _number_text(item)
    if isinstance(item, str):
        return item
    raise _type_error(key, flag, item)


def _values(key: str, spelling: str, flag: _Flag, value: Any) -> List[str]:
    """The tokens of one keyword argument, after checking its Python type (the core checks its value)."""
    kind = flag.kind
    if kind == "switch":
        if not isinstance(value, bool):
            raise _type_error(key, flag, value)
        return [spelling] if value else []
    if kind in ("integer", "number"):
        if not _is_number(value):
            raise _type_error(key, flag, value)
        return [spelling, _number_text(value)]
    if kind == "number_or_text":
        if _is_number(value):
            return [spelling, _number_text(value)]
        if not isinstance(value, str):
            raise _type_error(key, flag, value)
        return [spelling, value]
    if kind == "text":
        if not isinstance(value, (str, _os.PathLike)):
            raise _type_error(key, flag, value)
        return [spelling, _os.fspath(value)]
    if kind == "list":
        if isinstance(value, (list, tuple)):
            if not value:
                raise Error(f"{key} is an empty list", key)
            return [spelling, ",".join(_list_item(key, flag, v) for v in value)]
        return [spelling, _list_item(key, flag, value)]
    if kind == "range":
        if isinstance(value, str):
            return [spelling, value]
        if isinstance(value, (list, tuple)) and len(value) == 2 and all(_is_number(v) for v in value):
            return [spelling, f"{_number_text(value[0])}-{_number_text(value[1])}"]
        raise _type_error(key, flag, value)
    if isinstance(value, (list, tuple)) and len(value) == 3 and all(_is_number(v) for v in value):
        return [spelling, *(_number_text(v) for v in value)]
    raise _type_error(key, flag, value)


def _require_text(key: str, token: str) -> None:
    """A value the C++ core can take: text that is UTF-8 (a lone surrogate such as '\\ud800' is not)."""
    try:
        token.encode("utf-8")
    except UnicodeEncodeError as e:
        raise Error(f"{key} is not valid text: {e.reason} at position {e.start}", key) from None


class _Arguments:
    """Keyword arguments as the command line's tokens, and each flag spelling → the keyword that gave it."""

    def __init__(self, command: str, kwargs: Mapping[str, Any]) -> None:
        self.command = command
        self.tokens: List[str] = []
        self.keyword_of: Dict[str, str] = {}
        self.launch = False
        table = _table(command)
        for key, value in kwargs.items():
            flag = table.get(key)
            if flag is None and command == "job" and value is not None:
                # A Megatron flag the CLI accepts and ignores (listed in context.ignored_flags) or refuses
                # by name: the core says which, with the CLI's own message.
                spelling = "--" + key.replace("_", "-")
                if _core.classify_flag(spelling) in ("ignored", "refused"):
                    self.keyword_of[spelling] = key
                    words = [spelling] if value is True else [spelling, *(str(v) for v in (
                        value if isinstance(value, (list, tuple)) else [value]))]
                    for word in words:
                        _require_text(key, word)
                    self.tokens += words
                    continue
            if flag is None:
                raise Error(f"unknown argument '{key}'{_core.did_you_mean(key, sorted(table))}", key)
            if value is None:  # None: not given, the default
                continue
            for spelling in flag.spellings:
                self.keyword_of[spelling] = key
            tokens = _values(key, "--" + key.replace("_", "-"), flag, value)
            for token in tokens:
                _require_text(key, token)
            self.tokens += tokens

    def add_launch_line(self, line: Union[str, Sequence[str]]) -> None:
        words = _shlex.split(line) if isinstance(line, str) else [str(w) for w in line]
        for word in words:
            _require_text("line", word)
        if not any(w.endswith(".py") for w in words):
            words = ["pretrain_gpt.py", *words]  # a bare Megatron argument list
        self.tokens += ["--", *words]
        self.launch = True

    def rename(self, message: str) -> Tuple[str, Optional[str]]:
        """The core's message with its flags named by the caller's keywords; the first keyword named."""
        table = _table(self.command)
        named: List[str] = []

        def name(match: "_re.Match[str]") -> str:
            token = match.group(0)
            key = self.keyword_of.get(token)
            if key is None and not self.launch and _keyword(token) in table:
                key = _keyword(token)
            if key is None:
                return token
            named.append(key)
            return key

        renamed = _FLAG_TOKEN.sub(name, message)
        return renamed, (named[0] if named else None)

    def call(self, fn: Any, *args: Any) -> Any:
        try:
            return fn(*args)
        except _core.InputError as e:
            message, argument = self.rename(str(e))
            raise Error(message, argument) from None


def _loads(text: str) -> Any:
    return _json.loads(text)


# ---- the API ------------------------------------------------------------------------------------------


class Job:
    """A training job (model, cluster, layout, training settings), validated as the CLI validates it.

    Keyword arguments are the CLI's job flags in snake_case (``trainplan help flags``; :func:`flags`):
    ``model`` (a catalog name, our YAML/JSON file or a Hugging Face config.json), ``cluster`` (a name or a
    file), ``num_gpus``/``num_nodes``, ``tp``, ``pp``, ``cp``, ``ep``, ``dp``, ``sequence_parallel``,
    ``mbs``, ``gbs``, ``zero_stage``, ``recompute_granularity``, ``use_distributed_optimizer``, ... A switch
    takes True (False leaves it off); None leaves any argument at its default. No arguments at all is
    BLOOM-176B's production layout, as on the command line.

    Raises :class:`Error` naming the argument for an unknown keyword, a wrong type or a value the CLI
    refuses.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._arguments = _Arguments("job", kwargs)
        self._job = self._arguments.call(_core.parse_job, self._arguments.tokens)

    @classmethod
    def from_megatron(cls, line: Union[str, Sequence[str]], **kwargs: Any) -> "Job":
        """A job from a Megatron-LM launch line (``torchrun --nproc_per_node 8 ... pretrain_gpt.py
        --tensor-model-parallel-size 2 ...``) or a bare argument list; ``kwargs`` (e.g. ``cluster=``) are
        given before it. Flags that change no estimate are listed in ``context.ignored_flags``."""
        job = cls.__new__(cls)
        job._arguments = _Arguments("job", kwargs)
        job._arguments.add_launch_line(line)
        job._job = job._arguments.call(_core.parse_job, job._arguments.tokens)
        return job

    @classmethod
    def from_files(cls, model: Union[str, _os.PathLike], cluster: Union[str, _os.PathLike, None] = None,
                   **kwargs: Any) -> "Job":
        """A job whose model (our YAML/JSON or a Hugging Face config.json) and cluster come from files."""
        return cls(model=model, cluster=cluster, **kwargs)

    @property
    def args(self) -> List[str]:
        """The command-line arguments of this job: ``trainplan memory <args>`` prints the same."""
        return list(self._arguments.tokens)

    def __repr__(self) -> str:
        return f"trainplan.Job.from_args({self.args!r})"

    def model(self) -> Dict[str, Any]:
        """The parameter tree with exact counts (``trainplan model --json``): ``model.parameters`` by module,
        counts of parameters (not bytes)."""
        return _loads(self._arguments.call(self._job.model))

    def memory(self) -> Dict[str, Any]:
        """Memory per GPU for every pipeline stage and whether it fits (``trainplan memory --json``):
        ``memory.stages[i].weights_bytes``, ``…activations_bytes``, ``…reserved_bytes`` (bytes),
        ``memory.capacity_bytes`` (the usable memory) and ``memory.fits``."""
        return _loads(self._arguments.call(self._job.memory))

    def comm(self) -> Dict[str, Any]:
        """Process groups and traffic per parallel dimension per iteration (``trainplan comm --json``):
        each dimension's bytes per GPU (``…_bytes``) and collective time (``…_s``, seconds)."""
        return _loads(self._arguments.call(self._job.comm))

    def time(self) -> Dict[str, Any]:
        """Iteration time and throughput (``trainplan time --json``): ``time.iteration_s`` (seconds),
        ``time.tflops_per_gpu`` (10^12 FLOP/s), ``time.mfu`` and ``time.hfu`` (fractions of the peak),
        ``time.breakdown_s`` (seconds per cause) and ``time.fits``."""
        return _loads(self._arguments.call(self._job.time))

    def schedule(self, gpipe: bool = False) -> Dict[str, Any]:
        """The pipeline timeline (``trainplan schedule --json``; GPipe with gpipe=True): each rank's
        events with start and end in seconds from the iteration's start."""
        if not isinstance(gpipe, bool):
            raise Error(f"gpipe takes True or False, got {type(gpipe).__name__} {gpipe!r}", "gpipe")
        return _loads(self._arguments.call(self._job.schedule, gpipe))

    @classmethod
    def from_args(cls, args: Sequence[str]) -> "Job":
        """A job from command-line arguments as ``trainplan memory`` takes them (``Job.args`` gives them back)."""
        job = cls.__new__(cls)
        job._arguments = _Arguments("job", {})
        job._arguments.tokens = [str(a) for a in args]
        job._arguments.launch = True  # the caller wrote flags: name them as written
        job._job = job._arguments.call(_core.parse_job, job._arguments.tokens)
        return job


def _keyword_help(command: str) -> str:
    lines = []
    for row in flags(command):
        unit = f" [{row['value_name']}]" if row["value_name"] else ""
        default = f" (default {row['default']})" if row["default"] not in ("", "off") else ""
        lines.append(f"    {' / '.join(row['keywords'])}{unit}: {row['help']}{default}")
    return "\n\nKeyword arguments (units in brackets):\n" + "\n".join(lines)


Job.__doc__ = (Job.__doc__ or "") + _keyword_help("job")


def search(**kwargs: Any) -> Dict[str, Any]:
    """Every valid layout ranked (``trainplan search --json``): ``candidates`` is a list of flat dicts
    (``pandas.DataFrame(result["search"]["candidates"])``). Layout keywords take lists (``tp=[2, 4, 8]``,
    ``recompute=["none", "full"]``); the rest are job flags. Runs on every core without holding the GIL.
    No arguments: BLOOM-176B on jean-zay-a100, 48 nodes, GBS 2048."""
    arguments = _Arguments("search", kwargs)
    return _loads(arguments.call(_core.search, arguments.tokens))


def shapes(**kwargs: Any) -> Dict[str, Any]:
    """Architectures (hidden, layers, heads) near ``target_params``, each with its fastest layout
    (``trainplan shapes --json``)."""
    arguments = _Arguments("shapes", kwargs)
    return _loads(arguments.call(_core.shapes, arguments.tokens))


def plan(job: Optional[Job] = None, **kwargs: Any) -> Dict[str, Any]:
    """The campaign: ramp-up, days, GPU-hours, checkpoints, failures (``trainplan plan --json``).
    ``train_tokens`` (or ``train_samples``, ``train_iters``) with a :class:`Job` or job keywords, or
    given speed figures (``iteration_s`` or ``tflops_per_gpu`` with ``num_gpus``, ``gbs``, ...)."""
    if job is not None and not isinstance(job, Job):
        raise Error(f"job takes a trainplan.Job, got {type(job).__name__}", "job")
    arguments = _Arguments("plan", kwargs)
    if job is not None:
        arguments.tokens += job.args
        arguments.launch = arguments.launch or job._arguments.launch
    return _loads(arguments.call(_core.plan, arguments.tokens))


def validate(csv: Union[str, _os.PathLike, None] = None, loso: bool = False) -> Dict[str, Any]:
    """Predicted against measured over the shipped tables, or the measurements in the file ``csv``;
    ``loso``: with leave-one-source-out over BLOOM's tables (``trainplan validate [--csv FILE] [--loso]
    --json``)."""
    if csv is not None and not isinstance(csv, (str, _os.PathLike)):
        raise Error(f"csv takes a file name, got {type(csv).__name__} {csv!r}", "csv")
    if not isinstance(loso, bool):
        raise Error(f"loso takes True or False, got {type(loso).__name__} {loso!r}", "loso")
    arguments = _Arguments("job", {})
    arguments.keyword_of["--csv"] = "csv"
    return _loads(arguments.call(_core.validate, "" if csv is None else _os.fspath(csv), loso))


def flag_classes() -> Dict[str, Any]:
    """The Megatron-LM, Megatron-DeepSpeed and BLOOM flags that are not modelled, as ``trainplan help flags``
    ends: ``ignored`` (they change no estimate; a keyword of :class:`Job` listed in ``context.ignored_flags``),
    ``ignored_at_value`` (flag, harmless_value, would_change), ``tp_comm_tuning`` (ignored without
    ``tp_comm_overlap``) and ``refused``: groups of flags with what each would change (a keyword raises
    :class:`Error` saying so)."""
    return dict(_core.flag_classes())


def models() -> Dict[str, Any]:
    """The embedded model catalog (``trainplan models --json``)."""
    return _loads(_core.models())


def gpus() -> Dict[str, Any]:
    """The embedded GPUs: memory in bytes, peak FLOP/s by precision, bandwidths (``trainplan gpus --json``)."""
    return _loads(_core.gpus())


def clusters() -> Dict[str, Any]:
    """The embedded clusters: GPUs per node, NICs, interconnect (``trainplan clusters --json``)."""
    return _loads(_core.clusters())


def __dir__() -> "List[str]":
    """``dir(trainplan)``: the API (PEP 562)."""
    return sorted(__all__)

del annotations  # the __future__ import's name: not part of the API
