# The front door and the docs stay what docs/doc-blocks.md promises: the README at most 250 lines,
# no dates and nothing outside the repository in the README or docs/, every relative link resolving
# to a file of the repository, and every shell example in an `sh` block (the kind the docs test runs).
import re
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
DATE = re.compile(r"\b20\d\d-")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|^\[[^\]]+\]:\s*(\S+)", re.M)
FENCE = re.compile(r"^\s*```+\s*(\S*)(.*)$")
COMMAND = re.compile(r"(surepick|bash|python|mpremote|pip|git|micropython|\.venv/bin/\S+)\s")
SHELLS = {"sh", "bash", "shell", "console", "zsh", "shell-session"}


def _ids(pages):
    return [p.relative_to(REPO).as_posix() for p in pages]


def test_the_readme_is_a_front_door_of_at_most_250_lines():
    n = len((REPO / "README.md").read_text().splitlines())
    assert n <= 250, "README.md has %d lines; move the detail into docs/ (at most 250)" % n


def test_pages_are_found():
    # the checks below look at the README and every page of docs/, not at an empty list
    assert len(PAGES) >= 10 and (REPO / "docs" / "doc-blocks.md") in PAGES


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_no_dates_and_nothing_outside_the_repository(page):
    for n, line in enumerate(page.read_text().splitlines(), 1):
        assert not DATE.search(line), "%s line %d has a date; history goes to CHANGELOG.md: %s" % (
            page.name, n, line.strip())
        assert "../shared" not in line, "%s line %d points outside the repository: %s" % (page.name, n, line.strip())


def _prose(text):
    # the text with code blocks and inline code blanked (newlines kept, so line numbers hold)
    text = re.sub(r"^\s*```.*?^\s*```", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), text)


def links(text):
    # -> [(line number, target)] of every Markdown link and link definition outside code
    out = []
    text = _prose(text)
    for m in LINK.finditer(text):
        out.append((text.count("\n", 0, m.start()) + 1, m.group(1) or m.group(2)))
    return out


def test_links_are_read_from_inline_links_and_definitions():
    text = ("see [a](docs/a.md) and ![pic](x.png)\n[b]: ../b.md\n`[not](code)` [c](https://x.org)\n"
            "```sh\necho [no](link)\n```\n")
    assert sorted(links(text)) == [(1, "docs/a.md"), (2, "../b.md"), (3, "https://x.org")]


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_relative_link_resolves_to_a_file_of_the_repository(page):
    for n, target in links(page.read_text()):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue            # a web address or an anchor on the same page
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.is_relative_to(REPO), "%s line %d: %s leaves the repository" % (page.name, n, target)
        assert path.exists(), "%s line %d: %s does not exist" % (page.name, n, target)


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_every_shell_example_is_in_a_plain_sh_block(page):
    # The docs test runs ```sh blocks only: a ```bash block, or ```sh with more after it, would
    # never be run, so it is refused here.
    inside = False
    lines = page.read_text().splitlines()
    for n, line in enumerate(lines, 1):
        m = FENCE.match(line)
        if not m:
            continue
        if inside:
            inside = False
            continue
        inside = True
        lang, rest = m.group(1).lower(), m.group(2).strip()
        first = next((s.strip() for s in lines[n:] if s.strip()), "")
        assert lang or not COMMAND.match(first), "%s line %d: a block of commands without `sh`: the docs " \
            "test would not run it (```sh, with `# test: skip (why)` on what needs hardware)" % (page.name, n)
        assert lang not in SHELLS - {"sh"}, "%s line %d: shell examples go in ```sh blocks (the docs test runs " \
            "them): %s" % (page.name, n, line.strip())
        assert not (lang == "sh" and rest), "%s line %d: ```sh takes nothing after it: %s" % (page.name, n, line)


def test_the_readme_indexes_every_page_of_docs():
    # a page nobody can find from the front door is lost: each docs/*.md has its row in the index
    linked = {target.split("#", 1)[0] for _n, target in links((REPO / "README.md").read_text())}
    missing = sorted(p.name for p in (REPO / "docs").glob("*.md") if "docs/" + p.name not in linked)
    assert not missing, "README.md's documentation index lacks %s" % ", ".join(missing)
