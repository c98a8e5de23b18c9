# ---- the OCI image (make image; conf/image/Containerfile): FROM scratch,
# its root laid out here: the command linked again with -static into
# $(B)/static (no loader, no libc wanted in the image) from the objects
# and archives of $(B) (the same compiler and flags: nothing compiled
# twice), and the preload library, both stripped. Built by podman (IMAGE_BUILDER=buildah works the
# same), --pull=never: nothing a registry would have to give. The image is
# named IMAGE (localhost/naglefix:<the version of include/nf_version.h>), the
# name conf/kubernetes/daemonset.yaml runs (tests/image/manifests.py checks).

NF_VERSION    := $(shell sed -n 's/^\#define NF_VERSION "\(.*\)"/\1/p' include/nf_version.h)
IMAGE         ?= localhost/naglefix:$(NF_VERSION)
IMAGE_BUILDER ?= podman
IMAGE_ROOT    := $(B)/image/root

# Under a lock of $(B)/static: tests/image/run.sh --prepare may be making
# it beside. This make builds the inputs; the make inside the lock
# (NF_STATIC_LINK set) decides whether to link.
ifdef NF_STATIC_LINK
$(B)/static/naglefix: $(NAGLEFIX_INPUTS)
	$(CC) $(CFLAGS) $(LDFLAGS) -static -o $@ $(NAGLEFIX_INPUTS) -lpthread -lm
else
$(B)/static/naglefix: FORCE_STATIC $(NAGLEFIX_INPUTS)
	@mkdir -p $(B)/static
	flock $(B)/static/.lock $(MAKE) --no-print-directory NF_STATIC_LINK=1 $@
endif

# The root laid out afresh each time (two files stripped): nothing stale
# in it, whatever changed.
image: $(B)/static/naglefix $(B)/libnaglefix.so
	rm -rf $(IMAGE_ROOT)
	install -d $(IMAGE_ROOT)/usr/bin $(IMAGE_ROOT)/usr/lib/naglefix $(IMAGE_ROOT)/etc \
		$(IMAGE_ROOT)/run $(IMAGE_ROOT)/tmp
	strip -o $(IMAGE_ROOT)/usr/bin/naglefix $(B)/static/naglefix
	strip --strip-unneeded -o $(IMAGE_ROOT)/usr/lib/naglefix/libnaglefix.so $(B)/libnaglefix.so
	chmod 0644 $(IMAGE_ROOT)/usr/lib/naglefix/libnaglefix.so
	chmod 1777 $(IMAGE_ROOT)/tmp
	$(IMAGE_BUILDER) build --pull=never --layers=false --build-arg VERSION=$(NF_VERSION) -t $(IMAGE) \
		-f conf/image/Containerfile $(B)/image
	@echo "make image: $(IMAGE), $$($(IMAGE_BUILDER) image inspect -f '{{.Size}}' $(IMAGE)) bytes"

# The name make image gives (tests/image/run.sh checks the manifests run it).
image-name:
	@echo $(IMAGE)

# The image built under a name of the suite's own and run against this
# host, the DaemonSet's pod played, the manifests checked
# (tests/image/run.sh).
test-image: all
	tests/image/run.sh

.PHONY: image image-name test-image FORCE_STATIC
