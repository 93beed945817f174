# TAP-like reporting shared by the shell tests (sourced, not run).
# Each test prints "ok N - what" / "not ok N - what" lines, then finish
# prints the plan and exits 1 if anything failed.

T_NUM=0
T_FAILED=0

ok()
{
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM - $*"
}

not_ok()
{
	T_NUM=$((T_NUM + 1))
	T_FAILED=$((T_FAILED + 1))
	echo "not ok $T_NUM - $*"
}

skip()
{
	T_NUM=$((T_NUM + 1))
	echo "ok $T_NUM - # SKIP $*"
}

# check DESCRIPTION COMMAND...: ok if COMMAND succeeds.
check()
{
	local what=$1
	shift
	if "$@"; then
		ok "$what"
	else
		not_ok "$what"
	fi
}

diag()
{
	sed 's/^/# /' "$@" >&2
}

finish()
{
	echo "1..$T_NUM"
	if [ "$T_FAILED" -gt 0 ]; then
		echo "# $T_FAILED of $T_NUM failed" >&2
		exit 1
	fi
	exit 0
}

# bail_out WHY: stop the test here, failed, saying why.
bail_out()
{
	not_ok "$*"
	echo "Bail out! $*"
	finish
}
