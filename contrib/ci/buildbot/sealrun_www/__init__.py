# SPDX-License-Identifier: Apache-2.0
"""A small web UI for the sealrun Buildbot master (contrib/ci/buildbot/master.cfg).

Buildbot's `www` service needs a "base" web application; Buildbot's own (the buildbot-www package,
with the waterfall and grid views) is not packaged in Debian 12, whose buildbot 3.7 has the web
server, the REST API (/api/v2) and no user interface. This package is that base application when
Buildbot's is not installed: one static page (static/index.html) that reads the REST API and
shows the builders, the recent builds as a waterfall of steps, and a build's page with every step,
its result and its links (the receipt, its HTML report). It also serves the artifacts the master
keeps (receipts/ under the master's directory) at /receipts/, each response sandboxed by a
Content-Security-Policy: what a job left in out/ is the job's, and must not run as this page.

master.cfg calls install(); when Buildbot's own buildbot-www is installed, it is used instead.
"""
import os

import pkg_resources
from twisted.web import static

from buildbot.plugins import db as plugin_db
from buildbot.www.plugin import Application


class SandboxedFile(static.File):
    """static.File whose every response is sandboxed and never content-sniffed."""

    def render(self, request):
        request.setHeader(b"Content-Security-Policy", b"sandbox")
        request.setHeader(b"X-Content-Type-Options", b"nosniff")
        return super().render(request)


class SealrunWww(Application):
    def __init__(self, receipts_dir):
        super().__init__(__name__, "sealrun: builds, steps and receipts")
        os.makedirs(receipts_dir, exist_ok=True)
        self.resource.putChild(b"receipts", SandboxedFile(receipts_dir))


def install(receipts_dir):
    """Registers this application as the "base" web app in Buildbot's plugin database (where the
    www service looks it up when it starts its site), unless one is there already. Returns
    whether it did."""
    apps = plugin_db.get_plugins("www", None)
    if "base" in apps:
        return False
    app = SealrunWww(receipts_dir)
    dist = pkg_resources.Distribution(project_name="sealrun-www", version=app.version)
    entry = pkg_resources.EntryPoint.parse("base = sealrun_www:install", dist=dist)
    # The database's tree of entry points is private API of buildbot.plugins.db (3.7); the
    # loader hands out the application made here.
    apps._tree.add("base", plugin_db._PluginEntry(apps._group, entry, lambda _entry: app))
    return True
