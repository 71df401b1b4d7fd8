#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Prints the finished builds of a Buildbot 3.7 master as one JSON array, read from its sqlite
database (read-only): for each build its number, result code, properties, steps (name, result)
and the text of the 'sealrun run' step's stdio log. Used by the Buildbot tests (tests/ci) to wait
for and check build results without going through the web server.

usage: buildbot_builds.py MASTER_DIR/state.sqlite
"""
import bz2
import json
import sqlite3
import sys
import zlib

READ = {0: lambda b: b, 1: zlib.decompress, 2: bz2.decompress}


def main():
    db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True, timeout=10)
    builds = []
    query = "SELECT id, number, results FROM builds WHERE complete_at IS NOT NULL ORDER BY number"
    for build_id, number, results in db.execute(query).fetchall():
        props = {name: json.loads(value) for name, value in db.execute(
            "SELECT name, value FROM build_properties WHERE buildid = ?", (build_id,))}
        steps = [{"name": n, "results": r} for n, r in db.execute(
            "SELECT name, results FROM steps WHERE buildid = ? ORDER BY number", (build_id,))]
        text = []
        for content, compressed in db.execute(
                "SELECT c.content, c.compressed FROM logchunks c JOIN logs l ON c.logid = l.id "
                "JOIN steps s ON l.stepid = s.id WHERE s.buildid = ? AND s.name = 'sealrun run' "
                "ORDER BY l.id, c.first_line", (build_id,)):
            data = content if isinstance(content, bytes) else content.encode()
            text.append(READ[compressed](data).decode("utf-8", "replace"))
        builds.append({"number": number, "results": results, "properties": props,
                       "steps": steps, "run_log": "".join(text)})
    print(json.dumps(builds))


if __name__ == "__main__":
    main()
