"""Tests of tabula-client: offline ones (the shared hashing vectors, exact JSON, amounts) and live
ones against a running service (TABULA_URL, TABULA_TOKEN, TABULA_ADMIN_TOKEN), see support.py."""
