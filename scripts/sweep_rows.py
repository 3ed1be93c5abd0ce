"""Reading a `kernbench sweep` (or `bench`) rows file: each row as its run's result with
the point's part, key and values beside it."""
import json


def headline(row):
    """The milestone sweep's headline rows: decode at C = P = 8, and every prefill."""
    k = row["result"]["knobs"]
    return row["part"] != "decode" or (k.get("cubes_per_group") == 8 and k.get("pes") == 8)


def load(path):
    """(the sweep document, its rows flattened: the result's fields plus part, key, values, git_revision, headline)."""
    with open(path) as f:
        sweep = json.load(f)
    rows = [dict(r["result"], part=r["part"], key=r["key"], values=r["values"], git_revision=r["git_revision"],
                 headline=headline(r))
            for r in sweep["rows"]]
    return sweep, rows
