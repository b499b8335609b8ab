package pyq.reference;

import io.apicurio.common.apps.config.DynamicConfigPropertyList;
import javax.enterprise.context.ApplicationScoped;
import javax.enterprise.inject.Produces;

/** The list the config-index build extension would generate (its deployment jar is not on Maven Central): none. */
@ApplicationScoped
public class NoDynamicConfigProperties {
    @Produces
    @ApplicationScoped
    public DynamicConfigPropertyList properties() {
        return new DynamicConfigPropertyList(new java.util.ArrayList<>());
    }
}
