/* test_notify.c - the Standard Webhooks signature of a notification and its
 * console link
 * (src/notify/deliver.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include "palisade/notify.h"

/* The example of the Standard Webhooks specification (and its libraries'
 * tests): a receiver using them accepts what palisade sends. */
static void test_webhook_sign_matches_the_specification(void **st)
{
	(void)st;
	char sig[128], err[128];
	assert_int_equal(pal_webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					  "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330,
					  "{\"test\": 2432232314}", sig, sizeof sig, err,
					  sizeof err),
			 0);
	assert_string_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
	/* any other id, timestamp or body signs differently */
	assert_int_equal(pal_webhook_sign("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
					  "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265331,
					  "{\"test\": 2432232314}", sig, sizeof sig, err,
					  sizeof err),
			 0);
	assert_string_not_equal(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
}

static void test_webhook_sign_refuses_other_secrets(void **st)
{
	(void)st;
	char sig[128], err[128];
	assert_int_equal(pal_webhook_sign("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "m", 1, "{}", sig,
					  sizeof sig, err, sizeof err),
			 PAL_EINVAL);
	assert_non_null(strstr(err, "whsec_"));
	assert_int_equal(pal_webhook_sign("whsec_", "m", 1, "{}", sig, sizeof sig, err, sizeof err),
			 PAL_EINVAL);
	assert_int_equal(
	    pal_webhook_sign("whsec_not base64!", "m", 1, "{}", sig, sizeof sig, err, sizeof err),
	    PAL_EINVAL);
}

static void test_notify_console_link_absolute_with_public_url(void **st)
{
	(void)st;
	const char *payload = "{\"type\": \"palisade.job.failed\", \"data\": {\"job\": \"a.b\", "
			      "\"console\": \"/console/job?id=a.b\", \"attempts\": 3}}";
	assert_null(pal_notify_absolute_console(payload, NULL));
	assert_null(pal_notify_absolute_console(payload, ""));
	char *out = pal_notify_absolute_console(payload, "https://ops.example.com/palisade//");
	assert_non_null(out);
	assert_string_equal(out,
			    "{\"type\":\"palisade.job.failed\",\"data\":{\"job\":\"a.b\","
			    "\"console\":\"https://ops.example.com/palisade/console/job?id=a.b\","
			    "\"attempts\":3}}");
	free(out);
	/* no path to prefix: sent as it is */
	assert_null(pal_notify_absolute_console("{\"data\": {\"job\": \"x\"}}", "https://h"));
	assert_null(pal_notify_absolute_console("not json", "https://h"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_webhook_sign_matches_the_specification),
	    cmocka_unit_test(test_webhook_sign_refuses_other_secrets),
	    cmocka_unit_test(test_notify_console_link_absolute_with_public_url),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
