"""Stage: render generated files from the Jinja2 templates and format them with black."""

from __future__ import annotations

import dataclasses
import re
from importlib import resources
from pathlib import Path

import black
import jinja2

from porter.errors import PorterError
from porter.port.launch.launcher import LOOPED_MAX_BLOCK, LOOPED_MIN_ROW_BYTES
from porter.port.scaffold import Scaffold


def _template_dir() -> Path:
    # Installed: the porter.templates package; from a checkout: ../templates.
    try:
        path = Path(str(resources.files("porter.templates")))
        if (path / "kernel.py.j2").is_file():
            return path
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "templates"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_template_dir())),
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["pyrepr"] = repr  # a Python literal of a string or list
    return env


_TODO = re.compile(r"^(\s*)['\"]TODO\(porter\): (.*)['\"]$", re.M)
_NOTE = re.compile(r"^(\s*)['\"]NOTE\(porter\): (.*)['\"]$", re.M)


def todo_comments(source: str) -> str:
    """Marker strings left by the passes become comments: `# TODO(porter): ...`
    for what an engineer must do, `# ...` for why the code is as it is."""
    source = _NOTE.sub(lambda m: f"{m.group(1)}# {m.group(2)}", source)
    return _TODO.sub(lambda m: f"{m.group(1)}# TODO(porter): {m.group(2)}", source)


def render_text(template: str, **context) -> str:
    """A non-Python file (Markdown) from its template."""
    return environment().get_template(template).render(**context)


def render(template: str, **context) -> str:
    """A Python file from its template, formatted by black."""
    return format_python(todo_comments(render_text(template, **context)), template)


def render_kernel(scaffold: Scaffold) -> str:
    """A scaffold's kernel.py."""
    fields = {f.name: getattr(scaffold, f.name) for f in dataclasses.fields(scaffold)}
    return render(
        "kernel.py.j2",
        **fields,
        looped_block_cols=LOOPED_MAX_BLOCK,
        looped_min_row_bytes=LOOPED_MIN_ROW_BYTES,
    )


def format_python(text: str, what: str = "generated file") -> str:
    try:
        return black.format_str(text, mode=black.Mode())
    except black.InvalidInput as err:
        raise PorterError(
            f"porter generated invalid Python for {what} ({err}); please report it"
        ) from err
