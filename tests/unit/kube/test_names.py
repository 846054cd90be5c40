"""Name checks: apimachinery's exact messages, and Go's end-of-text `$`."""

from __future__ import annotations

import pytest

from kubetrain.kube.names import (
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_label_value,
    qualified_name_errors,
)

DNS1035 = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def test_dns1035_label_reports_length_then_shape() -> None:
    assert is_dns1035_label("pytorch-job-worker-0") == []
    assert is_dns1035_label("0-starts-with-a-digit") == [DNS1035]
    assert is_dns1035_label("a" * 64) == ["must be no more than 63 characters"]
    assert is_dns1035_label("-" * 64) == ["must be no more than 63 characters", DNS1035]


@pytest.mark.parametrize("check", [is_dns1035_label, is_dns1123_label, is_dns1123_subdomain])
def test_a_final_newline_is_not_a_name(check: object) -> None:
    assert callable(check) and check("name\n") != [] and check("name") == []


def test_subdomains_allow_dots_labels_do_not() -> None:
    assert is_dns1123_subdomain("a.b-c") == [] and is_dns1123_label("a.b-c") != []
    assert is_dns1123_label("0abc") == [] and is_dns1035_label("0abc") != []


def test_qualified_names_and_label_values() -> None:
    assert qualified_name_errors("example.com/My_Name") == []
    assert qualified_name_errors("a/b/c", "a valid label key")[0].startswith("a valid label key must consist")
    assert qualified_name_errors("/x") == ["prefix part must be non-empty"]
    assert qualified_name_errors("Bad_/x")[0].startswith("prefix part a lowercase RFC 1123 subdomain")
    assert qualified_name_errors("x" * 64) == ["name part must be no more than 63 bytes"]
    assert (
        is_label_value("")
        and is_label_value("v1.2_3")
        and not is_label_value("-v")
        and not is_label_value("v\n")
    )
