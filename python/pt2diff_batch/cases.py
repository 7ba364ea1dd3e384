"""The cases of a batch: found in capture directories, manifests and folders of archives, deduplicated.

A SOURCE is one of
  - a capture directory (it holds index.json, written by pt2diff_capture): every graph it lists;
  - a manifest: a text file of lines GRAPH<TAB>INPUTS[<TAB>OPTIONS] ('#' comments and blank lines are
    skipped; INPUTS empty or '-' for the archive's sample inputs; OPTIONS shell-quoted pt2diff flags for
    that case; relative paths are relative to the manifest);
  - a directory of *.pt2: each with the inputs file whose name is the longest '_'-prefix of its stem
    followed by '_inputs.pt' (mlp.pt2 and mlp_core.pt2 both take mlp_inputs.pt), else its sample inputs;
  - one .pt2 file, with its inputs found the same way.
"""
import dataclasses
import hashlib
import json
import os
import shlex

CAPTURE_INDEX = "index.json"


class SourceError(Exception):
    """A SOURCE that is none of the kinds above, or a manifest line that cannot be read: one line for the user."""


@dataclasses.dataclass
class Case:
    """One place a graph occurs in the corpus.

    name: how the summary names it (the archive's path as found); graph, inputs: absolute paths (inputs
    None for the archive's sample inputs); options: pt2diff flags for this case (batch-wide ones first);
    where: the capture's source location, when known; failure/message: set when the case cannot run at all
    (a capture entry whose export failed); key: the content hash, filled by assign_keys()."""
    name: str
    graph: str
    inputs: str | None
    options: list[str]
    source: str
    where: str | None = None
    failure: str | None = None
    message: str | None = None
    key: str = ""

    def to_dict(self):
        return dataclasses.asdict(self)

    @staticmethod
    def from_dict(d):
        return Case(**d)


def discover(sources, options):
    """The cases of every SOURCE, in order, each with the batch-wide `options` (a list of pt2diff flags)."""
    cases = []
    for source in sources:
        if os.path.isdir(source) and os.path.isfile(os.path.join(source, CAPTURE_INDEX)):
            cases += _capture_dir(source, options)
        elif os.path.isdir(source):
            found = _archive_dir(source, options)
            if not found:
                raise SourceError(f"{source}: no index.json and no *.pt2 in it (a capture directory, a folder of archives or a manifest)")
            cases += found
        elif os.path.isfile(source) and source.endswith(".pt2"):
            cases.append(_archive(source, source, options))
        elif os.path.isfile(source):
            cases += _manifest(source, options)
        else:
            raise SourceError(f"{source}: no such file or directory (a capture directory, a folder of archives or a manifest)")
    if not cases:
        raise SourceError("no cases found in " + ", ".join(sources))
    return cases


def matching_inputs(archive):
    """The inputs file of `archive` (longest '_'-prefix of its stem + '_inputs.pt' next to it), or None."""
    folder, stem = os.path.split(archive[:-4] if archive.endswith(".pt2") else archive)
    parts = stem.split("_")
    for n in range(len(parts), 0, -1):
        candidate = os.path.join(folder, "_".join(parts[:n]) + "_inputs.pt")
        if os.path.isfile(candidate):
            return candidate
    return None


def _archive(path, source, options):
    inputs = matching_inputs(path)
    return Case(name=os.path.normpath(path), graph=os.path.abspath(path), inputs=inputs and os.path.abspath(inputs),
                options=list(options), source=source)


def _archive_dir(folder, options):
    names = sorted(n for n in os.listdir(folder) if n.endswith(".pt2") and os.path.isfile(os.path.join(folder, n)))
    return [_archive(os.path.join(folder, n), folder, options) for n in names]


def _capture_dir(folder, options):
    index = os.path.join(folder, CAPTURE_INDEX)
    try:
        with open(index) as f:
            graphs = json.load(f)["graphs"]
        if not isinstance(graphs, list):
            raise ValueError("'graphs' is not a list")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SourceError(f"{index}: not a pt2diff_capture index ({e}); recapture, or list the graphs in a manifest") from None
    cases = []
    for entry in graphs:
        if not isinstance(entry, dict) or not isinstance(entry.get("archive"), str):
            raise SourceError(f"{index}: an entry without an archive name ({_clip(entry)}); recapture")
        if any(isinstance(entry.get(k), str) and "\0" in entry[k] for k in ("archive", "inputs")):
            raise SourceError(f"{index}: an entry whose archive or inputs name holds a NUL byte ({_clip(entry)}); recapture")
        archive = os.path.join(folder, entry["archive"])
        inputs = os.path.join(folder, entry["inputs"]) if isinstance(entry.get("inputs"), str) else None
        # pt2diff_capture writes strings or null: anything else is unknown (the index was edited or damaged).
        where = entry.get("where") if isinstance(entry.get("where"), str) else None
        case = Case(name=os.path.normpath(archive), graph=os.path.abspath(archive), inputs=inputs and os.path.abspath(inputs),
                    options=list(options), source=folder, where=where)
        if entry.get("status") != "ok":
            case.failure = "export_failed" if entry.get("status") == "export_failed" else "not_captured"
            error = entry.get("error")
            case.message = (error if isinstance(error, str) and error else
                            f"capture status {_clip(entry.get('status'), 40)}: the graph was never called")
        cases.append(case)
    return cases


def _clip(value, width=80):
    """`value` as one short line, for a message."""
    text = " ".join((value if isinstance(value, str) else repr(value)).split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _manifest(path, options):
    base = os.path.dirname(os.path.abspath(path))
    cases = []
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read it as a manifest ({e})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cols = line.split("\t")
        if len(cols) > 3:
            raise SourceError(f"{path}:{number}: {len(cols)} tab-separated columns; a manifest line is GRAPH<TAB>INPUTS[<TAB>OPTIONS]")
        graph = cols[0].strip()
        inputs = cols[1].strip() if len(cols) > 1 else ""
        try:
            extra = shlex.split(cols[2]) if len(cols) > 2 else []
        except ValueError as e:
            raise SourceError(f"{path}:{number}: the options column does not parse ({e})") from None
        if "\0" in graph or "\0" in inputs:
            raise SourceError(f"{path}:{number}: a NUL byte in a path; a manifest line is GRAPH<TAB>INPUTS[<TAB>OPTIONS]")
        graph_path = os.path.join(base, graph)
        inputs_path = os.path.join(base, inputs) if inputs and inputs != "-" else None
        cases.append(Case(name=os.path.normpath(os.path.join(os.path.dirname(path), graph)), graph=os.path.abspath(graph_path),
                          inputs=inputs_path and os.path.abspath(inputs_path), options=merge_options(options, extra),
                          source=path))
    return cases


# pt2diff flags that may be given several times (each adds one); a manifest's add to the batch's.
REPEATABLE = ("--inductor-config", "--load-library")


def _groups(options):
    """Flags with their values: ['--compiled', 'eager', '--no-exploded'] -> [['--compiled', 'eager'], ['--no-exploded']].
    Options hold only flags (no positionals), so a token not starting with '--' is the value of the flag before it."""
    groups = []
    for token in options:
        if token.startswith("--") or not groups:
            groups.append([token])
        else:
            groups[-1].append(token)
    return groups


def merge_options(base, extra):
    """The batch-wide `base` flags with a manifest line's `extra` ones: a flag in `extra` replaces the same
    flag in `base` (repeatable flags, REPEATABLE, add to it)."""
    replaced = {g[0].split("=", 1)[0] for g in _groups(extra)} - set(REPEATABLE)
    kept = [t for g in _groups(base) if g[0].split("=", 1)[0] not in replaced for t in g]
    return kept + list(extra)


def _file_hash(path):
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return "unreadable:" + path  # the case runs and reports the error; never merged with another


def assign_keys(cases):
    """Sets each case's key: a hash of the graph's bytes, the inputs' bytes and the options. Cases with one
    key are one diagnosis. Returns {key: first case with it} in corpus order."""
    hashes = {}
    first = {}
    for case in cases:
        h = hashlib.sha256()
        for path in (case.graph, case.inputs):
            if path is None:
                h.update(b"sample-inputs")
            else:
                if path not in hashes:
                    hashes[path] = _file_hash(path)
                h.update(hashes[path].encode())
            h.update(b"\0")
        h.update(json.dumps(case.options).encode())
        if case.failure:  # a capture entry that never became an archive is its own row
            h.update(f"{case.failure}:{case.name}".encode())
        case.key = h.hexdigest()[:16]
        first.setdefault(case.key, case)
    return first
