"""The lab as a static site (`attnlab export-site DIR`): `site` renders and writes it, `states` adds the
links that stand in for the pages' forms."""
