package guard

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/klog/v2"
)

// Path is the URL path the guard serves its reviews on (the webhook configuration's
// clientConfig.service.path or url).
const Path = "/guard/evictions"

// maxReviewBytes bounds a review's body: an AdmissionReview of an Eviction is a few kilobytes.
const maxReviewBytes = 1 << 20

// ServeHTTP answers an admission.k8s.io/v1 AdmissionReview posted as JSON: 400 when the body is
// not one, else 200 with the AdmissionReview carrying the response (Review). It is served on the
// TLS listener only.
func (g *Guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an admission.k8s.io/v1 AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	var review admissionv1.AdmissionReview
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxReviewBytes))
	if err == nil {
		err = json.Unmarshal(body, &review)
	}
	switch {
	case err != nil:
		http.Error(w, "guard: not an AdmissionReview: "+err.Error(), http.StatusBadRequest)
		return
	case review.APIVersion != admissionv1.SchemeGroupVersion.String() || review.Kind != "AdmissionReview" || review.Request == nil:
		http.Error(w, fmt.Sprintf("guard: want an %s AdmissionReview with a request, got %s %s", admissionv1.SchemeGroupVersion, review.APIVersion, review.Kind), http.StatusBadRequest)
		return
	}
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: g.Review(r.Context(), review.Request)}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		klog.ErrorS(err, "Writing an admission review's answer")
	}
}
