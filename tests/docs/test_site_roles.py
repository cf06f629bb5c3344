"""The API reference renders (issue 23, item 17): no raw Sphinx roles, functions not submodules.

The docstrings cite objects with Sphinx roles (``:func:`read_ratings```);
``docs/hooks/roles.py`` turns them into links when the site is built.  The
fast tests check the hook on a fragment; the slow one builds the whole site
(``mkdocs build --strict``, as ``scripts/test.sh`` does) and greps the HTML.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RAW_ROLE = re.compile(r":(?:func|mod|class|meth|attr|data|obj|exc):(?:<code>|`)")


def _hook():
    spec = importlib.util.spec_from_file_location("roles_hook", ROOT / "docs" / "hooks" / "roles.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_hook_links_full_relative_and_tilde_names():
    hook = _hook()
    hook._ANCHORS.update({"nlpower.params.LMMParams": "reference/",
                          "nlpower.params.LMMParams.to_coding": "reference/",
                          "nlpower.ratings.read_ratings": "reference/"})
    html = ("<p>See :class:<code>~nlpower.params.LMMParams</code>, :meth:<code>to_coding</code>, "
            ":func:<code>read_ratings()</code> and :func:<code>numpy.random.default_rng</code>.</p>")
    out = hook.render(html, "reference/")
    assert not RAW_ROLE.search(out)
    assert '<a class="autorefs" href="#nlpower.params.LMMParams"><code>LMMParams</code></a>' in out
    assert 'href="#nlpower.params.LMMParams.to_coding"><code>to_coding</code>' in out
    assert 'href="#nlpower.ratings.read_ratings"><code>read_ratings</code>' in out
    assert "<code>numpy.random.default_rng</code>" in out  # not documented here: plain code
    other = hook.render(html, "power/")
    assert 'href="../reference/#nlpower.params.LMMParams"' in other


@pytest.mark.slow
def test_built_site_has_no_raw_roles_and_lists_functions(tmp_path):
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
                   cwd=ROOT, check=True, env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"})
    pages = {p: p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    raw = {str(p.relative_to(site)): len(RAW_ROLE.findall(t)) for p, t in pages.items()}
    assert sum(raw.values()) == 0, {p: n for p, n in raw.items() if n}
    reference = (site / "reference" / "index.html").read_text(encoding="utf-8")
    ids = re.findall(r'id="(nlpower[\w.]*)"', reference)
    assert len(ids) == len(set(ids)), "an object is listed twice"
    assert not [i for i in ids if re.search(r"\._[a-z]", i)], "private helpers are listed"
    for function in ("nlpower.accuracy.power", "nlpower.bleu.power", "nlpower.paired.compare",
                     "nlpower.accuracy.estimate", "nlpower.bleu.estimate"):
        assert f'id="{function}.{function.rsplit(".", 1)[1]}"' in reference  # the function
        assert f'id="{function}.summarise"' not in reference                  # not the module
