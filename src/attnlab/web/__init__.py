"""The lab's web app: server-rendered pages (complete without JavaScript), small hand-written JS, JSON API.

Start it with `attnlab serve`; build it with `attnlab.web.app.create_app()`. How to add a page: see the
docstring of `attnlab.web.app`.
"""
