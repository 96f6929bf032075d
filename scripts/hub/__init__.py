"""`bespoke space`, `submit`: the Hub commands."""
