"""One module per page; each exposes `router` (the page and its JSON API) and is listed in web/app.py PAGES."""
