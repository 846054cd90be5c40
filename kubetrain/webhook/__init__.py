"""The validating admission webhook: upstream's paths and messages, served over TLS.

* `handler`: AdmissionRequest -> AdmissionResponse for one kind (pure);
* `review`: the AdmissionReview wire format;
* `server`: the aiohttp HTTPS server with reloadable certificates;
* `certs` / `provisioner`: self-signed certificates kept in a Secret and injected as caBundle.

The webhook never imports the runtime (they are sibling layers); the CLI composes them.
"""

from kubetrain.webhook.certs import CertBundle
from kubetrain.webhook.handler import admit, routes, webhook_path
from kubetrain.webhook.provisioner import CertConfig, CertProvisioner, ObjectApi
from kubetrain.webhook.review import AdmissionRequest, AdmissionResponse, MalformedReview
from kubetrain.webhook.server import WebhookServer

__all__ = [
    "AdmissionRequest",
    "AdmissionResponse",
    "CertBundle",
    "CertConfig",
    "CertProvisioner",
    "MalformedReview",
    "ObjectApi",
    "WebhookServer",
    "admit",
    "routes",
    "webhook_path",
]
