"""CLI commands, one module each; every module exposes `register(app)`."""


def lang_option(value: str) -> str:
    """The --lang callback every command shares: zh or en, else a clear error listing them (never a silent
    fallback to Chinese; the web pages fall back to zh with a visible note instead)."""
    import typer

    from attnlab.i18n import LANGS

    if value not in LANGS:
        raise typer.BadParameter(f"{value!r} is not a language of the lab; use one of: {', '.join(LANGS)}")
    return value
