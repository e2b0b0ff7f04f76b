# mockd: the protected mocks' fuzz targets. Their client, ceval-mock, is built by
# mk/embedded.mk with the other embedded programs.

.PHONY: fuzz-mockd

# fuzz-mockd: the protocol decoder and the fixture parser, briefly (make fuzz runs them too;
# fuzz-target and the budgets are explained in the Makefile).
fuzz-mockd:
	$(call fuzz-target,./mockd,FuzzDecodeRequest,80000)
	$(call fuzz-target,./mockd/fixture,FuzzParseFixture,40000)

