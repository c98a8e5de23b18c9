# ---- the OCI image (make image; conf/image/Containerfile): FROM scratch,
# its root laid out here: the command built again with -static into
# $(B)/static (no loader, no libc wanted in the image), and the preload
# library, both stripped. Built by podman (IMAGE_BUILDER=buildah works the
# same), --pull=never: nothing a registry would have to give. The image is
# named IMAGE (localhost/naglefix:<the version of include/nf_version.h>), the
# name conf/kubernetes/daemonset.yaml runs (tests/image/manifests.py checks).

NF_VERSION    := $(shell sed -n 's/^\#define NF_VERSION "\(.*\)"/\1/p' include/nf_version.h)
IMAGE         ?= localhost/naglefix:$(NF_VERSION)
IMAGE_BUILDER ?= podman
IMAGE_ROOT    := $(B)/image/root

# Under a lock of $(B)/static: tests/image/run.sh --prepare may be building
# it beside.
$(B)/static/naglefix: FORCE_STATIC
	@mkdir -p $(B)/static
	flock $(B)/static/.lock $(MAKE) --no-print-directory B=$(B)/static LDFLAGS='$(LDFLAGS) -static' $@

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
