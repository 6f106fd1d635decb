"""`textclf runs ui`: the run database in the browser through Datasette, read-only.

Every table and column described (Datasette's metadata, from db/columns.py), canned queries (best run per
corpus, accuracy over time, a run's epochs, a search's leaderboard and trials), and a run's page that leads with
its summary, learning curve (an SVG drawn by matplotlib on the server, as `textclf runs plot` draws it) and epochs,
every recorded field (settings, search, plan: long JSON) folded below them. Binds 127.0.0.1 unless told otherwise;
beyond loopback it needs --token, as `textclf serve` does: sent as
`Authorization: Bearer <token>`, or once as `?token=<token>`, which a browser then keeps as a cookie."""

from __future__ import annotations

import hmac
from pathlib import Path

from datasette import hookimpl
from datasette.app import Datasette
from datasette.plugins import pm

from db.columns import TABLES
from textclf.errors import SettingsError
from textclf.frontends.bearer import bearer_matches

TEMPLATES = Path(__file__).with_name("runs_ui_templates")
COOKIE = "textclf_token"

QUERIES = {
    "best_run_per_corpus": {
        "title": "Best run per corpus",
        "description": "The finished run with the highest score on each corpus, by the run's own metric "
        "(accuracy, or a label-set corpus's micro-F1 or the metric it was trained for).",
        "sql": "select corpus, coalesce(eval_metric, 'accuracy') as metric, id as run_id, "
        "max(coalesce(eval_score, eval_accuracy)) as score, eval_kind, n_train, started_at "
        "from runs where status = 'finished' and coalesce(eval_score, eval_accuracy) is not null "
        "group by corpus, metric order by corpus, metric",
    },
    "accuracy_over_time": {
        "title": "Accuracy over time",
        "description": "Every finished run's score by its own metric, newest first; filter by corpus.",
        "sql": "select id as run_id, started_at, corpus, coalesce(eval_metric, 'accuracy') as metric, "
        "coalesce(eval_score, eval_accuracy) as score, eval_kind, backend, device from runs "
        "where status = 'finished' and (:corpus = '' or corpus = :corpus) order by started_at desc",
    },
    "run_epochs": {
        "title": "A run's epochs",
        "description": "Loss and accuracies epoch by epoch, and which of the run's models trained each.",
        "sql": "select epoch, view, loss, train_accuracy, eval_accuracy, seconds, docs_per_s from epochs "
        "where run_id = :run_id order by epoch",
    },
    "search_leaderboard": {
        "title": "A search's leaderboard",
        "description": "The model search's best candidates of a run in the order `textclf runs show` lists them, "
        "the chosen one first and marked (the settings' own kept within a standard error ranks "
        "first though another scored higher); accuracy: the mean validation score over the folds "
        "compared, epochs: the best epoch's.",
        "sql": "select cast(board.key as integer) + 1 as rank, case when board.key = 0 then 'chosen' else '' end "
        "as chosen, json_extract(board.value, '$.accuracy') as accuracy, "
        "json_extract(board.value, '$.folds') as folds, json_extract(board.value, '$.settings') as settings "
        "from runs, json_each(runs.search, '$.leaderboard') as board where runs.id = :run_id "
        "order by board.key",
    },
    "search_trials": {
        "title": "A search's trials",
        "description": "Every (candidate, fold) a run's search trained, with its validation score after each epoch.",
        "sql": "select candidate, fold, settings, epoch_accuracies, seconds from search_trials "
        "where run_id = :run_id order by candidate, fold",
    },
}


def metadata(database: str) -> dict:
    tables = {
        name: {"description": table["description"], "columns": table["columns"]} for name, table in TABLES.items()
    }
    tables["runs"]["sort_desc"] = "id"
    return {
        "title": "textclf runs",
        "description": "Runs, epochs, searches, jobs and published models.",
        "databases": {database: {"tables": tables, "queries": QUERIES}},
    }


class _Plugin:
    """Datasette plugin hooks: a run's epochs and learning curve for its row page."""

    @staticmethod
    @hookimpl
    def extra_template_vars(view_name, table, request, datasette):
        if view_name != "row" or table != "runs" or request is None:
            return {}

        async def run_vars():
            run_id = request.url_vars.get("pks", "")
            if not run_id.isdigit():
                return {}
            db = datasette.get_database()
            epochs = [
                dict(row)
                for row in (
                    await db.execute(
                        "select epoch, loss, train_accuracy, eval_accuracy, seconds, view from epochs where run_id = ? "
                        "order by epoch",
                        [int(run_id)],
                    )
                ).rows
            ]
            run = dict(
                (
                    await db.execute(
                        "select id, corpus, status, started_at, ended_at, eval_kind, eval_metric, eval_score, "
                        "eval_accuracy, "
                        "n_train, n_eval, n_classes, backend, device, error, early_stopping from runs where id = ?",
                        [int(run_id)],
                    )
                ).first()
                or {}
            )
            if not run or not epochs:
                return {"run_epochs": epochs, "run_curve": None, "run_summary": run}
            import json

            from textclf.frontends.plot import curve_svg

            stopping = json.loads(run["early_stopping"]) if run.get("early_stopping") else None
            return {
                "run_epochs": epochs,
                "run_summary": run,
                "run_curve": curve_svg({**run, "early_stopping": stopping, "epochs": epochs}),
            }

        return run_vars


def build_app(db_path: Path, token: str | None):
    """The Datasette ASGI app on this database, behind the token where one is set."""
    if not db_path.is_file():
        raise SettingsError(f"run database '{db_path}' does not exist: train a model first, or pass --db")
    datasette = Datasette(
        [str(db_path)], metadata=metadata(db_path.stem), template_dir=str(TEMPLATES), settings={"default_page_size": 50}
    )
    if pm.get_plugin("textclf_runs") is None:  # Datasette's plugins are registered process-wide
        pm.register(_Plugin, name="textclf_runs")
    app = _ReadOnly(datasette.app())
    return app if not token else _TokenGuard(app, token)


class _ReadOnly:
    """ASGI: the run UI only reads; a request of any other method than GET or HEAD (Datasette's write API, a
    POST to /-/insert) gets 405 in one line, not Datasette's traceback."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in ("GET", "HEAD"):
            return await _respond(
                send,
                405,
                [(b"content-type", b"text/plain"), (b"allow", b"GET, HEAD")],
                b"the run UI is read-only: use GET (textclf runs ... changes runs)\n",
            )
        return await self.app(scope, receive, send)


class _TokenGuard:
    """ASGI: every request carries the token (header or cookie); `?token=` sets the cookie and redirects."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        from urllib.parse import parse_qs

        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        given = parse_qs(scope.get("query_string", b"").decode()).get("token", [""])[0]
        cookies = dict(part.strip().split("=", 1) for part in headers.get("cookie", "").split(";") if "=" in part)
        if given and hmac.compare_digest(given.encode(), self.token.encode()):
            return await _respond(
                send,
                302,
                [
                    (b"location", scope["path"].encode()),
                    (b"set-cookie", f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()),
                ],
            )
        cookie = cookies.get(COOKIE, "")
        if bearer_matches(headers.get("authorization", ""), self.token) or (
            cookie and hmac.compare_digest(cookie.encode(), self.token.encode())
        ):
            return await self.app(scope, receive, send)
        await _respond(
            send,
            401,
            [(b"content-type", b"text/plain")],
            b"missing or wrong token: open this page with ?token=<token> once, or send "
            b"'Authorization: Bearer <token>'\n",
        )


async def _respond(send, status: int, headers: list, body: bytes = b"") -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
