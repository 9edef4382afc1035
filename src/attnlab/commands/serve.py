"""`attnlab serve`: start the lab (FastAPI + uvicorn) on loopback and print its URL."""

from __future__ import annotations

from pathlib import Path

import typer

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def exposure_warning(host: str) -> str | None:
    """What `attnlab serve --host HOST` must say when HOST is not loopback (None when it is)."""
    if host in LOOPBACK:
        return None
    return (
        f"attnlab serve: WARNING: listening on {host}, so other machines can reach the lab. The lab has no "
        "authentication (no login, no password): anyone who can reach this port can use it and start "
        "training runs on this machine. Use it only on a network you trust, or keep the default 127.0.0.1."
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def serve(
        host: str = typer.Option("127.0.0.1", help="Address to listen on; loopback keeps the lab on this machine."),
        port: int = typer.Option(8000, min=0, max=65535, help="Port to listen on (0 = any free port)."),
        runs: Path = typer.Option(
            Path("runs"),
            "--runs",
            help="Folder of checkpoints the lab can open at /runs "
            "(`attnlab train --out runs/NAME` writes one there); nothing outside it is opened.",
        ),
        data: Path = typer.Option(
            None,
            "--data",
            help="Folder of corpora (subfolders of chinese-poetry JSON, .txt or "
            ".json files) the scale page offers by name for a sweep, and word2vec's page its files; nothing outside it "
            "is read.",
        ),
        cache: Path = typer.Option(
            None,
            "--cache",
            help="Folder where lesson results are kept between runs of the "
            "lab (default: $ATTNLAB_CACHE, else $XDG_CACHE_HOME/attnlab or ~/.cache/attnlab).",
        ),
        no_cache: bool = typer.Option(False, "--no-cache", help="Keep lesson results in memory only."),
        warm: bool = typer.Option(
            True,
            "--warm/--no-warm",
            envvar="ATTNLAB_WARM",
            help="Compute the default pages "
            "in the background at start, giving way to every request (ATTNLAB_WARM=0: off).",
        ),
    ) -> None:
        """Start the lab in your browser: the web app, offline, on http://127.0.0.1:8000/ by default."""
        from attnlab.lessons.common import disk_cache

        if no_cache:
            disk_cache.use(None)
        elif cache is not None:
            disk_cache.use(cache)
        try:
            _serve(host, port, runs, warm, data)
        except KeyboardInterrupt:  # Ctrl+C before the server took over its signals (e.g. while torch loads)
            raise typer.Exit(130) from None


def _serve(host: str, port: int, runs: Path, warm: bool = True, data: Path | None = None) -> None:
    """Check the options, bind, print the URL, serve until stopped (the server then ends the process)."""
    from attnlab.lessons.common import disk_cache
    from attnlab.train.storage.links import LinkLoop, real_path
    from attnlab.web.server import bind, url_of
    from attnlab.web.server import serve as run

    try:
        runs = real_path(runs.expanduser())
    except LinkLoop as err:
        typer.echo(f"attnlab serve: --runs {err}", err=True)
        raise typer.Exit(2) from None
    if runs.exists() and not runs.is_dir():
        typer.echo(f"attnlab serve: --runs {runs} is a file, not a folder of checkpoints", err=True)
        raise typer.Exit(2)
    if data is not None and not data.expanduser().is_dir():
        typer.echo(f"attnlab serve: --data {data} is not a folder of corpora", err=True)
        raise typer.Exit(2)

    try:
        sock = bind(host, port)
    except OSError as err:
        typer.echo(f"attnlab serve: cannot listen on {host}:{port}: {err.strerror or err}", err=True)
        raise typer.Exit(1) from None
    warning = exposure_warning(host)
    if warning:
        typer.echo(warning, err=True)
    typer.echo(f"注意力实验室 attnlab: {url_of(sock)}/   (Ctrl+C to stop)")
    found = "" if runs.is_dir() else " (not there yet: `attnlab train --out " + str(runs / "NAME") + "` makes it)"
    typer.echo(f"checkpoints from {runs}{found}: {url_of(sock)}/runs")
    folder = disk_cache.folder()
    typer.echo(f"lesson results kept in {folder}" if folder else "lesson results kept in memory only (--no-cache)")
    if data is not None:
        typer.echo(f"corpora from {data.expanduser().resolve()}: {url_of(sock)}/scale")
    run(sock, hosts=(host,), runs_dir=runs, warm=warm, data_dir=data)
