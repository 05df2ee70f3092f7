"""The one printer and what it draws with: streams, tables, cells, --fields, sinks, jq, views."""
