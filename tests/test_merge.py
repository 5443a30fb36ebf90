"""Edits are never lost: porter.merge's three-way merge, and porter.store
merging porter's regenerated scaffold into an engineer's edited one."""

import json

import pytest

from porter.errors import PorterError
from porter.merge import merge3
from porter.store import read_bases, sha256_text, write_case

BASE_TEXT = "a\nb\nc\nd\ne\n"


@pytest.mark.parametrize(
    "ours, theirs, merged",
    [
        # changes far apart: both kept
        ("a\nB\nc\nd\ne\nnote\n", "a\nb\nc\nD\ne\n", "a\nB\nc\nD\ne\nnote\n"),
        # the same change on both sides: once
        ("a\nX\nc\nd\ne\n", "a\nX\nc\nd\ne\n", "a\nX\nc\nd\ne\n"),
        # one side unchanged: the other's text
        (BASE_TEXT, "z\n" + BASE_TEXT, "z\n" + BASE_TEXT),
        ("a\nc\nd\ne\n", BASE_TEXT, "a\nc\nd\ne\n"),
        # a deletion and an edit elsewhere
        ("a\nc\nd\ne\n", "a\nb\nc\nd\nE\n", "a\nc\nd\nE\n"),
    ],
)
def test_changes_that_do_not_touch_merge_cleanly(ours, theirs, merged):
    result = merge3(BASE_TEXT, ours, theirs)
    assert (result.text, result.conflicts) == (merged, 0)


@pytest.mark.parametrize(
    "ours, theirs",
    [
        ("a\nX\nc\nd\ne\n", "a\nY\nc\nd\ne\n"),  # the same line, changed apart
        ("a\nb\nX\nc\nd\ne\n", "a\nb\nY\nc\nd\ne\n"),  # two insertions at one place
    ],
)
def test_changes_that_overlap_are_marked_not_guessed(ours, theirs):
    result = merge3(BASE_TEXT, ours, theirs)
    assert result.conflicts == 1
    assert "<<<<<<< yours\nX\n=======\nY\n>>>>>>> porter's\n" in result.text


def _case(tmp_path, kernel="def k():\n    return 1\n"):
    case = tmp_path / "case"
    manifest = {"kernels": [], "modules": []}
    write_case(case, {"kernel.py": kernel, "README.md": "# case\n"}, manifest)
    return case, manifest


def test_an_edited_kernel_gets_porters_changes_merged_in(tmp_path):
    case, manifest = _case(tmp_path, "# header v1\n\ndef k():\n    return 1\n")
    kernel = case / "kernel.py"
    kernel.write_text(kernel.read_text().replace("return 1", "return 1  # tuned"))
    (case / "README.md").write_text("# case\n\nmy notes\n")
    new = {"kernel.py": "# header v2\n\ndef k():\n    return 1\n", "README.md": "# case\n"}
    result = write_case(case, new, manifest, replace_all=False)
    assert result.merged == ["kernel.py"] and result.kept == ["README.md"]
    assert kernel.read_text() == "# header v2\n\ndef k():\n    return 1  # tuned\n"
    assert (case / "README.md").read_text() == "# case\n\nmy notes\n"
    # the edit as it was is kept, and porter's text is the next merge's base
    (backup,) = result.backups
    assert "return 1  # tuned" in (case / backup).read_text()
    assert read_bases(case)["kernel.py"] == new["kernel.py"]
    # recorded as porter's text: the merged file counts as edited next time,
    # and with nothing new from porter it is kept as it is
    generated = json.loads((case / "manifest.json").read_text())["generated"]
    assert generated["kernel.py"] == sha256_text(new["kernel.py"])
    again = write_case(case, new, manifest, replace_all=False)
    assert sorted(again.kept) == ["README.md", "kernel.py"] and not again.backups
    assert kernel.read_text() == "# header v2\n\ndef k():\n    return 1  # tuned\n"


def test_overlapping_edits_leave_the_kernel_and_write_both(tmp_path):
    case, manifest = _case(tmp_path)
    kernel = case / "kernel.py"
    kernel.write_text("def k():\n    return 2\n")
    result = write_case(
        case, {"kernel.py": "def k():\n    return 3\n", "README.md": "# case\n"}, manifest
    )
    assert result.conflicts == ["kernel.py"] and not result.backups
    assert kernel.read_text() == "def k():\n    return 2\n"
    both = (case / "kernel.py.porter-merge").read_text()
    assert "    return 2\n=======\n    return 3\n" in both
    # the base stays the text both sides started from
    assert read_bases(case)["kernel.py"] == "def k():\n    return 1\n"


def test_force_takes_porters_text_and_keeps_the_edit_as_a_backup(tmp_path):
    case, manifest = _case(tmp_path)
    (case / "kernel.py").write_text("def k():\n    return 2\n")
    result = write_case(
        case, {"kernel.py": "def k():\n    return 3\n", "README.md": "# case\n"},
        manifest, force=True,
    )
    assert (case / "kernel.py").read_text() == "def k():\n    return 3\n"
    (backup,) = result.backups
    assert (case / backup).read_text() == "def k():\n    return 2\n"


def test_a_folder_that_is_not_a_case_keeps_its_files_as_backups(tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "kernel.py").write_text("my own kernel\n")
    (folder / "notes.txt").write_text("mine\n")
    files = {"kernel.py": "porter's\n", "README.md": "# case\n"}
    with pytest.raises(PorterError, match="is not a porter case"):
        write_case(folder, files, {"kernels": [], "modules": []})
    result = write_case(folder, files, {"kernels": [], "modules": []}, force=True)
    (backup,) = result.backups
    assert (folder / backup).read_text() == "my own kernel\n"
    assert (folder / "notes.txt").read_text() == "mine\n"
    assert (folder / "kernel.py").read_text() == "porter's\n"
